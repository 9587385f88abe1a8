"""The tables both pages show, as plain text cells: report.md and report.html only
differ in how they escape and mark them up."""

import attrs

from simkit.report.data import Story
from simkit.report.history import Evidence, Latencies, Operation
from simkit.sim.behaviours import CATALOGUE

MAX_VIOLATIONS = 20  # listed per invariant in a report; summary.json keeps them all
TIMELINE_NOTE = (
    "Setup, faults, adversary actions, crashes, ceremonies (and the relay events that show "
    "they took effect), revocations, alarms and rejections (each device's first, with its "
    "count), in virtual time."
)
MAX_HISTORY = 500  # writes listed in report.html; those a violation names always are


@attrs.frozen
class Table:
    heading: str  # "" for none
    note: str  # a sentence above the table, "" for none
    header: tuple[str, ...]
    rows: list[tuple[str, ...]]
    verdicts: bool = False  # the first column says pass or fail
    anchors: str = ""  # rows get the id "<anchors>-<N>" from a first cell "#N"
    marked: frozenset[int] = frozenset()  # row indexes to highlight
    empty: str = "None."  # written in place of a table without rows (never a bare header)


VERDICTS = {True: "✓ pass", False: "✗ FAIL", None: "– not checked"}


def verdict(passed: bool | None) -> str:
    """A result cell: pass, FAIL, or not checked (never a pass for what did not run)."""
    return VERDICTS[passed]


def summary_tables(story: Story, summary: dict) -> list[Table]:
    """The run at a glance, then what its description promises, its expectations and
    its invariants."""
    result = (
        verdict(summary["passed"])
        if summary["passed"] is not None
        else "not judged: no summary.json, only what the trace records"
    )
    facts = [
        ("Result", result),
        ("Seed", "unknown" if summary["seed"] is None else str(summary["seed"])),
        ("Trace hash", summary["trace_hash"]),
        ("Events", f"{len(story.events)} over {story.end:.1f} s of virtual time"),
        ("Devices", ", ".join(story.devices) or "none"),
        ("Convergence", story.convergence.sentence()),
    ]
    if summary.get("variant"):
        facts.insert(2, ("Variant", summary["variant"]))
    if summary.get("recorded"):
        facts.insert(1, ("Recorded outcome", summary["recorded"]))
    change = summary.get("change")
    if change:
        facts.insert(3, ("The change ran", "; ".join(change["lines"]) or "-"))
        if change["verdict"] and summary["passed"]:
            facts[0] = ("Result", change["verdict"])
    expectations = [(verdict(e["passed"]), e["name"], e["detail"]) for e in summary["expectations"]]
    invariants = []
    for inv in summary["invariants"]:
        found = inv["violations"]
        detail = (
            f"{len(found)} violation(s); first: {found[0]}" if found else inv.get("note") or "none"
        )
        invariants.append((verdict(inv["passed"]), inv["name"], detail))
    checked = [inv for inv in summary["invariants"] if inv["passed"] is not None]
    note = (
        f"{len(checked)} of {len(summary['invariants'])} invariants were checked; "
        "the others say why not."
        if len(checked) < len(summary["invariants"])
        else ""
    )
    versions, costs = versions_table(story), costs_table(summary)
    return [
        Table("", "", ("Run", ""), facts),
        *([promises_table(summary["promises"])] if summary.get("promises") else []),
        *([versions] if versions else []),
        *([costs] if costs else []),
        *(
            [Table("Expectations", "", ("Result", "Expectation", "Detail"), expectations, True)]
            if expectations
            else []
        ),
        Table("Invariants", note, ("Result", "Invariant", "Violations"), invariants, True),
    ]


def title(summary: dict) -> str:
    """The report's title: the run's name, then what broke (a failing run's first
    screen opens with its failure, not with its figures)."""
    name = f"simkit report: {summary['scenario']}"
    violation = summary.get("violation")
    if violation:
        return f"{name}: FAIL, {violation['invariant']}"
    if summary["passed"] is False:
        return f"{name}: FAIL"
    return name


def story_sentences(summary: dict) -> list[tuple[str, str]]:
    """What a failing run's first screen says after what broke, as (label, text): whose
    it is, what the change did, where the run broke."""
    out = []
    attribution = summary.get("attribution")
    if attribution:
        out.append(("Whose", attribution["line"]))
    change = summary.get("change")
    if change and change.get("lines"):
        out.append(("What the change did", "; ".join(change["lines"])))
    violation = summary.get("violation") or {}
    if violation.get("where"):
        out.append(("Where", f"the run broke {violation['where']}"))
    return out


PROMISE_VERDICTS = {"held": "✓ held", "broken": "✗ BROKEN", "not checked": "– not checked"}


def promises_table(promises: list[dict]) -> Table:
    """What the scenario's description promises, and which checks below judge it."""
    rows = [
        (PROMISE_VERDICTS[p["verdict"]], p["says"], ", ".join(p["checked_by"]), p["detail"] or "-")
        for p in promises
    ]
    note = "Each claim of the description, judged by the expectations and invariants it names."
    return Table("Promises", note, ("Result", "Promise", "Checked by", "Detail"), rows, True)


def versions_table(story: Story) -> Table | None:
    """In a run of a release: the version each party started on and when it moved to
    the new one (None in a run of one version)."""
    started: dict[str, str] = {}
    moved: dict[str, str] = {}
    for e in story.events:
        name = e.fields.get("name") if e.kind == "event" else None
        if name == "version":
            started[e.actor] = f"{e.fields['role']}: {e.fields['version']}"
        elif name == "version.upgrade":
            moved[e.actor] = f"new: {e.fields['version']} at {e.t:.1f} s"
    if not started:
        return None
    parties = sorted(started, key=lambda p: (p != "relay", p))
    rows = [(p, started[p], moved.get(p, "— (stayed)")) for p in parties]
    note = "A release runs two versions at once (docs/releases.md): who ran which, and when."
    return Table("Versions", note, ("Party", "Started on", "Moved to"), rows)


def costs_table(summary: dict) -> Table | None:
    """What the run cost the relay and the devices, per route (None when the summary
    does not say: a report rendered from a trace alone)."""
    costs = summary.get("costs")
    if not costs:
        return None
    rows = [
        (route, f"{c['requests']:,}", f"{c['bytes_up']:,}", f"{c['bytes_down']:,}")
        for route, c in costs["routes"].items()
    ]
    rows.append(
        (
            "all routes",
            f"{costs['requests']:,}",
            f"{costs['bytes_up']:,}",
            f"{costs['bytes_down']:,}",
        )
    )
    per_write, per_hour, converge = (
        costs["per_app_write"],
        costs["per_device_hour"],
        costs["converge_s"],
    )
    rates = [f"{per_write['requests']:g} requests per write"] if per_write else []
    rates += [f"{per_hour['requests']:g} requests per device-hour"] if per_hour else []
    note = (
        f"The requests the relay served, for {costs['app_writes']:,} application writes "
        f"over {costs['device_hours']:g} device-hours; {costs['records_pulled']:,} records "
        f"pulled, {costs['checkpoint_records']:,} checkpoint records"
        + "".join(f"; {rate}" for rate in rates)
        + (
            f"; {converge['converged']} of {converge['writes']} writes reached every "
            f"follower, in {converge['p50']:g} s (median), {converge['p99']:g} s (p99)."
            if converge["converged"]
            else "."
        )
    )
    return Table("Cost", note, ("Route", "Requests", "Bytes up", "Bytes down"), rows)


def violation_lists(summary: dict) -> list[tuple[str, list[str]]]:
    """(invariant, its first ``MAX_VIOLATIONS`` violations and a count of the rest)."""
    out = []
    for inv in summary["invariants"]:
        found = inv["violations"]
        if found:
            more = len(found) - MAX_VIOLATIONS
            out.append(
                (inv["name"], found[:MAX_VIOLATIONS] + ([f"… {more} more"] if more > 0 else []))
            )
    return out


def behaviours_table(summary: dict) -> Table | None:
    """What of the protocol's behaviour catalogue (``simkit.sim.behaviours``, what
    fuzzing aims to cover) this run exercised, and how often; None for a summary
    without it (an older one)."""
    behaviours = summary.get("behaviours")
    if not behaviours:
        return None
    groups = {b.name: b.group for b in CATALOGUE}
    rows = [
        (groups[name], name, f"{count:,}")
        for name, count in sorted(
            behaviours["counts"].items(), key=lambda item: (groups.get(item[0], ""), item[0])
        )
        if name in groups
    ]
    note = (
        f"{behaviours['reached']} of the catalogue's {behaviours['catalogue']} behaviours "
        'happened in this run (docs/fuzzing.md, "Behaviours reached"); a scenario exercises '
        "what it is about, so most of the rest is expected to stay out."
    )
    return Table("Behaviours reached", note, ("Group", "Behaviour", "Times"), rows)


def timeline_table(story: Story) -> Table:
    header = ("t (s)", "Kind", "Event", "Actor", "Detail")
    return Table("Timeline", TIMELINE_NOTE, header, [m.cells() for m in story.timeline])


def violation_sentences(summary: dict) -> list[str]:
    """What broke, where and who: the violation section's lines before its evidence."""
    v = summary.get("violation")
    if v is None:
        return []
    lines = [v["text"]]
    seen = v.get("trace_seq")
    where = [
        f"seen at trace#{seen}" if isinstance(seen, int) else "",
        _named("graph", v.get("graph")),
    ]
    where += [_named("devices", v.get("devices")), _named("records", v.get("records"))]
    lines.append("; ".join(w for w in where if w) + ".")
    return lines


def _named(what: str, value) -> str:
    if not value:
        return ""
    return f"{what} {value if isinstance(value, str) else ', '.join(value)}"


def evidence_table(found: tuple[Evidence, ...]) -> Table:
    header = ("Trace", "t (s)", "Role", "Actor", "Event", "Detail")
    note = (
        "The trace events behind it, in trace order (trace#N is line N + 1 of trace.jsonl): "
        "the writes of the records it names (or a non-conforming client's forged write), the "
        "push that carried each, the relay's answer, each named device's decision and the "
        "pull that brought it, and its first log alarm; for a violation that names no record, "
        "the request behind the answer where it was seen."
    )
    return Table("Evidence", note, header, [e.cells() for e in found], anchors="ev")


def history_table(story: Story, ops: tuple[Operation, ...], stats: Latencies, violation) -> Table:
    """One row per write: issued, acknowledged, and per device applied (+seconds after
    issue), refused (reason), never (—), or blank where the device does not follow
    the graph; the writes a violation names are marked and always listed."""
    named = set((violation or {}).get("records") or ())
    graph = (violation or {}).get("graph")
    implicated = {
        op.seq for op in ops if op.record in named and (graph is None or op.graph == graph)
    }
    shown = [op for i, op in enumerate(ops) if i < MAX_HISTORY or op.seq in implicated]
    header = ("Write", "t (s)", "Writer", "Graph", "Record", "Op", "Acknowledged",
              *story.devices, "Everywhere")  # fmt: skip
    rows = [_history_row(story, op) for op in shown]
    more = len(ops) - len(shown)
    note = stats.sentence() + (f" {more} later writes are not listed." if more > 0 else "")
    note += (
        " Cells: seconds from issue to acknowledgement or to each device applying it; "
        "(newer): that device applied a later version of the record instead; —: it never did."
    )
    marked = frozenset(i for i, op in enumerate(shown) if op.seq in implicated)
    return Table("Per-operation history", note, header, rows, anchors="op", marked=marked)


def _history_row(story: Story, op: Operation) -> tuple[str, ...]:
    acked = f"+{op.ack_latency:.3f}" if op.ack_latency is not None else op.outcome
    cells = []
    for device in story.devices:
        d = op.delivery(device)
        if device == op.device:
            cells.append("wrote")
        elif d is not None and d.refused is not None:
            cells.append(f"refused: {d.refused}")
        elif d is not None:
            cells.append(f"+{d.t - op.t:.3f}" + (" (newer)" if d.newer else ""))
        else:
            cells.append("—" if device in op.followers else "")
    everywhere = f"+{op.replicated:.3f}" if op.replicated is not None else "no"
    return (f"#{op.seq}", f"{op.t:.3f}", op.device, op.graph, op.record, op.op, acked,
            *cells, everywhere)  # fmt: skip
