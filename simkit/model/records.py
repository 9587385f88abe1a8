"""Records: push with its four per-op rules, pull, and the log (spec: Records)."""

from simkit.model import schema
from simkit.model.answer import Expected, invalid, ok
from simkit.model.state import Call, Graph

OPTIONAL = ("e", "k", "sh")
SCHEMA = ("pipeline step 7", "limit: maxOpsPerPush", "limit: maxCiphertextChars")


def push(model, call: Call) -> Expected:
    """Push rules 1-4 per op, in order; the whole seq range is reserved up front."""
    settings = model.settings
    if not schema.push_body(call.body, settings.max_ops_per_push, settings.max_ciphertext_chars):
        raise invalid(SCHEMA, "push body schema (ops, maxOpsPerPush, maxCiphertextChars)")
    graph = model.written_graph(call.key)
    first = graph.counter + 1
    graph.counter += len(call.body["ops"])  # a refused op spends its number too
    accepted, rejected, notes = 0, [], []
    for seq, sent in enumerate(call.body["ops"], start=first):
        op = _stored_form(sent)
        row = graph.rows.get(op["recordId"])
        if op["rev"] > call.now + settings.max_rev_skew_ms:
            rejected.append({"recordId": op["recordId"], "reason": "rev-too-far-ahead"})
            notes.append(("push rule 1", "rejected"))
        elif row is not None and row["rev"] >= op["rev"]:
            notes.append(("push rule 2", "skipped"))
        elif reason := _quota(model, graph, row, op):
            rejected.append({"recordId": op["recordId"], "reason": reason})
            notes.append(("push rule 3", "refused"))
        else:
            graph.rows[op["recordId"]] = {**op, "seq": seq}
            graph.log.append({"seq": seq, "recordId": op["recordId"], "rev": op["rev"]})
            graph.pushers.add(call.member)
            accepted += 1
            notes.append(("push rule 4", "written"))
    answer = {"accepted": accepted, "cursor": graph.counter, "now": call.now}
    answer["epoch"] = graph.latest_epoch
    if rejected:
        answer["rejected"] = rejected
    decided = tuple(sorted({rule for rule, _ in notes})) or ("push: partial",)
    members = {"now": "push: now", "epoch": "push: epoch", "cursor": "push: counter",
               "rejected": (*decided, "push: partial")}  # fmt: skip
    note = f"ops in order: {', '.join(what for _, what in notes)}" if notes else "no ops"
    return ok(decided, answer, note, members)


def _stored_form(op: dict) -> dict:
    """An op as the relay keeps it: numbers as integers, optional members only if sent."""
    row = {"recordId": op["recordId"], "rev": int(op["rev"]), "n": op["n"], "c": op["c"]}
    for name in OPTIONAL:
        if name in op:
            row[name] = int(op[name]) if name == "e" else op[name]
    return row


def _quota(model, graph: Graph, row: dict | None, op: dict) -> str | None:
    """Push rule 3: a new row over the record quota, or stored ciphertext over the byte quota."""
    if row is None and len(graph.rows) + 1 > model.settings.quota_records:
        return "quota-records"
    stored = graph.row_bytes() - (0 if row is None else len(row["c"])) + len(op["c"])
    if stored > model.settings.quota_bytes:
        return "quota-bytes"
    return None


def _page(model, call: Call, rule: str) -> tuple[int, int]:
    """``after`` defaults to 0; ``limit`` defaults to, and is capped at, maxPullLimit."""
    query, ceiling = call.query, model.settings.max_pull_limit
    after, limit = query.get("after", "0"), query.get("limit", str(ceiling))
    if not (schema.decimal(after, 0) and schema.decimal(limit, 1)):
        raise invalid(rule, "after and limit are decimal integers")
    return int(after), min(int(limit), ceiling)


def _cursor(graph: Graph, after: int, page: list[dict], more: bool) -> int:
    """The last served seq while more waits; else the high-water mark (never backwards)."""
    return page[-1]["seq"] if more else max(after, graph.counter)


def pull(model, call: Call) -> Expected:
    rule = "pull: pages"
    after, limit = _page(model, call, rule)
    filters = {}
    for name, member in (("kinds", "k"), ("shards", "sh")):
        if name in call.query:
            if not schema.label_list(call.query[name]):
                raise invalid("pull: filter", f"{name} is a comma-separated list of labels")
            filters[member] = call.query[name].split(",")
    graph = model.graph(call.key)
    matches = sorted(
        (row for row in graph.rows.values()
         if row["seq"] > after and all(row.get(m) in wanted for m, wanted in filters.items())),
        key=lambda row: row["seq"],
    )  # fmt: skip
    page, more = matches[:limit], len(matches) > limit
    answer = {
        "ops": page,
        "cursor": _cursor(graph, after, page, more),
        "more": more,
        "epoch": graph.latest_epoch,
    }
    cursor = ("pull: pages", "pull: filtered cursor") if filters else "pull: pages"
    ops = ("pull: pages", "pull: filter") if filters else "pull: pages"
    return ok(rule, answer, members={"epoch": "push: epoch", "cursor": cursor, "ops": ops})


def log(model, call: Call) -> Expected:
    """Never filtered; ``head``/``oldest`` are the highest and lowest seq (0 when empty)."""
    rule = "log: never filtered"
    after, limit = _page(model, call, rule)
    graph = model.graph(call.key)
    keep = model.settings.log_keep  # a pruning relay keeps the newest entries only
    kept = graph.log if keep is None else graph.log[-keep:]
    entries = [entry for entry in kept if entry["seq"] > after]
    page, more = entries[:limit], len(entries) > limit
    return ok(
        rule,
        {
            "entries": page,
            "cursor": _cursor(graph, after, page, more),
            "more": more,
            "head": kept[-1]["seq"] if kept else 0,
            "oldest": kept[0]["seq"] if kept else 0,
        },
    )
