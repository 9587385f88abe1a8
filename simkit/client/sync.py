"""One sync run over one graph: keys, grants, rotation, push, pull, log verification.

The order (docs/client.md): fetch keys first (a device behind an epoch holds its
writes), fill key gaps, rotate if owed, push the queue, pull every subscription,
then verify the log up to what was served and publish a checkpoint when due.
"""

from simkit.client import keyops
from simkit.client.approval import APPROVED, fingerprint_of, self_sig_valid
from simkit.client.logread import alarm, note_counter, publish_checkpoint, save_log, verify_log
from simkit.client.logverify import with_claim
from simkit.client.paging import Pages, cut_short, share_spent, yield_run
from simkit.client.receive import Opened, Refusal
from simkit.client.schemas import CHECKPOINT_KIND
from simkit.client.transport import RelayUnavailable
from simkit.protocol.canonical import compact_json
from simkit.protocol.derived import checkpoint_record_id
from simkit.protocol.records import seal_record, sign_record


def prior_rev(record: dict | None) -> int:
    """The ``priorRev`` of client rule 1: the rev of the record being overwritten (0 if none)."""
    return record["at"] if record else 0


async def sync_graph(device, graph_id: str, of: int = 1) -> dict:
    """One graph's part of a sync run over ``of`` graphs; it gets an even share of
    ``run_budget_s`` (docs/client.md, "How long a sync run lasts")."""
    budget = device.config.run_budget_s
    device.share = None if budget is None else (device.clock.now_ms(), budget * 1000 / of)
    try:
        return await _sync_graph(device, graph_id)
    finally:
        device.share = None


async def _sync_graph(device, graph_id: str) -> dict:
    stats = {"pushed": 0, "pulled": 0, "refused": 0}
    if device.due(graph_id, "keys") and await _checked_keys(device, graph_id) is None:
        device.not_checked(graph_id, "keys")  # due again next run (F18)
        return stats
    if (
        device.config.auto_grant
        and device.keyring(graph_id).keys
        and device.due(graph_id, "grants")
    ):
        await keyops.grant_gaps(device, graph_id)
    await keyops.honour_rotation(device, graph_id)
    stats["pushed"] += await push(device, graph_id)
    for sub_key, sub in device.subscriptions(graph_id):
        pulled, refused = await pull(device, graph_id, sub_key, sub)
        stats["pulled"] += pulled
        stats["refused"] += refused
    if device.unfiltered(graph_id) and device.config.log_verification:
        await verify_log(device, graph_id)
        if publish_checkpoint(device, graph_id):
            stats["pushed"] += await push(device, graph_id)
    return stats


async def _checked_keys(device, graph_id: str) -> dict | None:
    """The key recheck this run is due: one that never reached the relay did not happen
    and stays due, so that a device back from an outage learns of a rotation before it
    pushes what it wrote meanwhile (client rule 5; F22 in docs/findings.md)."""
    try:
        return await keyops.refresh_keys(device, graph_id)
    except RelayUnavailable:
        device.not_checked(graph_id, "keys")
        raise


# -- push ------------------------------------------------------------------------------


def _op(device, graph_id: str, sk: str, record: dict, epoch: int, key: bytes) -> dict:
    sealed = device.as_sealed(record)
    signature = sign_record(device.keys.sign_key, sk, sealed)
    envelope = {"v": 1, "r": sealed, "d": device.device_id, "s": signature}
    n, c = seal_record(key, sk, envelope, entropy=device.entropy)
    op = {"recordId": record["id"], "rev": record["at"], "e": epoch, "n": n, "c": c}
    if device.config.send_metadata:
        op["k"] = record["kind"]
        shard = device.config.shard_of(record) if device.config.shard_of else None
        if shard is not None:
            op["sh"] = shard
    return op


def _sealed(device, graph_id: str, sk: str, record: dict, epoch: int, key: bytes) -> dict:
    """The op for a queued write, sealed once per version and epoch: a retry resends
    the same ciphertext (a new write or a new epoch seals afresh)."""
    cached = device.sealed.get((sk, record["id"]))
    if cached is not None and cached[0] is record and cached[1] == epoch:
        return cached[2]
    op = _op(device, graph_id, sk, record, epoch, key)
    device.sealed[sk, record["id"]] = (record, epoch, op)
    return op


def _batches(device, ops: list[dict]):
    """Client rule 7: at most 200 ops and 8 MiB per push."""
    batch, size = [], 0
    for op in ops:
        op_size = len(compact_json(op)) + 1
        if batch and (
            len(batch) >= device.config.max_batch_ops
            or size + op_size > device.config.max_batch_bytes - 64
        ):
            yield batch
            batch, size = [], 0
        batch.append(op)
        size += op_size
    if batch:
        yield batch


async def push(device, graph_id: str) -> int:
    """Push the queue unless behind an epoch; returns how many ops landed.

    Records re-stamped by a clock repair (client rule 9) are pushed again in the same run.
    """
    landed, repaired = await _push_queue(device, graph_id)
    if repaired:
        landed += (await _push_queue(device, graph_id))[0]
    return landed


async def _push_queue(device, graph_id: str) -> tuple[int, bool]:
    sk = device.storage_key(graph_id)
    queue = device.store.rows(f"queue:{sk}")
    if not queue:
        return 0, False
    ring = device.keyring(graph_id)
    if device.behind(graph_id) or not ring.keys:
        device.emit("keys.behind", graph_id, held=len(queue), holding=ring.current)
        return 0, False
    epoch, key = ring.current, ring.keys[ring.current]
    ops = [_sealed(device, graph_id, sk, entry["r"], epoch, key) for entry in queue.values()]
    for stale in [k for k in device.sealed if k[0] == sk and k[1] not in queue]:
        del device.sealed[stale]  # settled, or lost to the relay's copy
    landed, repaired = 0, False
    batches = list(_batches(device, ops))
    if len(batches) > 1:
        device.emit("push.batches", graph_id, batches=len(batches))
    for batch in batches:
        response = await device.request("POST", f"/graphs/{graph_id}/push", {"ops": batch})
        if response.status != 200:
            refusal = device.refusal(response)
            if refusal.get("error") == "not-permitted":  # client rule 11: hold, report, pull
                if graph_id not in device.readonly:
                    device.readonly.add(graph_id)
                    device.emit("policy.readonly", graph_id, need=refusal.get("need"))
            else:
                device.last_error = f"push {graph_id}: {response.status} {refusal.get('error')}"
            return landed, False
        device.readonly.discard(graph_id)
        answer = response.json()
        landed += _settle(device, graph_id, sk, batch, answer)
        repaired = repaired or any(
            r["reason"] == "rev-too-far-ahead" for r in answer.get("rejected", [])
        )
        device.store.commit()
        if device.behind(graph_id) or device.keyring(graph_id).current != epoch:
            break  # the rest was sealed under a key a newer epoch replaced: reseal next run
        if batch is not batches[-1] and share_spent(device):
            yield_run(device, graph_id, "push")  # the rest is pushed in the next run
            break
    return landed, repaired


def _settle(device, graph_id: str, sk: str, batch: list[dict], answer: dict) -> int:
    """Apply a push answer: drop what is settled, re-stamp after clock repair (client rule 9)."""
    device.note_epoch(graph_id, answer.get("epoch"))
    device.relay_offset = device.clock.now_ms() - answer["now"]  # at most its latency behind
    rejected = {r["recordId"]: r["reason"] for r in answer.get("rejected", [])}
    accepted = answer["accepted"]
    if "rev-too-far-ahead" in rejected.values():
        _repair_clock(device, answer["now"])
    for op in batch:
        record_id = op["recordId"]
        reason = rejected.get(record_id)
        if reason is None:
            device.emit("push.accepted", graph_id, recordId=record_id, rev=op["rev"])
        entry = device.store.get(f"queue:{sk}", record_id)
        if entry is None or entry["r"]["at"] != op["rev"]:
            continue  # rewritten while the push was in flight: the new version stays queued
        if reason == "rev-too-far-ahead":
            _restamp(device, graph_id, sk, entry)
            continue
        device.store.delete(f"queue:{sk}", record_id)
        device.store.delete(f"shadow:{sk}", record_id)  # settled: no copy kept aside is needed
        if reason is not None:  # refused for good (a quota): back to what the relay holds
            _restore(device, sk, record_id, entry["before"])
            device.last_error = f"push {graph_id}: {record_id} rejected ({reason})"
            device.emit("push.rejected", graph_id, recordId=record_id, reason=reason)
    note_counter(device, graph_id, answer["cursor"], "push answer")
    _skip_echo(device, graph_id, batch, accepted, rejected, answer["cursor"])
    return accepted


def _restore(device, sk: str, record_id: str, before: dict | None) -> None:
    """Undo a write the relay refused for good, so the device does not keep, for ever,
    a version nobody else will see."""
    if before is None:
        device.store.delete(f"records:{sk}", record_id)
    else:
        device.store.put(f"records:{sk}", record_id, before)


def _repair_clock(device, relay_now: int) -> None:
    """Adopt the relay's now once: skew = own clock - relay now; lower the high-water mark."""
    skew = device.clock.now_ms() - relay_now
    device.store.put("meta", "skew", skew)
    corrected = device.clock.now_ms() - skew
    device.store.put("meta", "last", min(device.store.get("meta", "last", 0), corrected))


def _restamp(device, graph_id: str, sk: str, entry: dict) -> None:
    """Re-stamp a write after a clock repair. If the relay's copy pulled meanwhile (kept
    aside by ``_apply``) is at or above the new rev, the write has lost: take that copy,
    which the cursor has already passed and no pull will bring again (found by the fuzzer)."""
    rid = entry["r"]["id"]
    record = {**entry["r"], "at": device.stamp(prior_rev(entry["before"]))}
    device.emit("record.restamped", graph_id, recordId=rid, old=entry["r"]["at"], new=record["at"],
                reason="rev-too-far-ahead")  # fmt: skip
    shadow = device.store.get(f"shadow:{sk}", rid)
    if shadow is not None and shadow["at"] >= record["at"]:
        device.store.put(f"records:{sk}", rid, shadow)
        device.store.delete(f"queue:{sk}", rid)
        device.store.delete(f"shadow:{sk}", rid)
        return
    device.store.put(f"records:{sk}", rid, record)
    device.store.put(f"queue:{sk}", rid, {"r": record, "before": entry["before"]})


def _skip_echo(device, graph_id, batch, accepted: int, rejected: dict, cursor: int) -> None:
    """Client rule 8: skip pulling our own ops back only when every op of the batch landed
    and nothing else was written in between (the seqs follow our cursor directly)."""
    sub_cursor = device.store.get("cursor", graph_id, 0)
    if accepted == len(batch) and not rejected and cursor == sub_cursor + len(batch):
        device.store.put("cursor", graph_id, cursor)
        device.emit("echo.skipped", graph_id, cursor=cursor)


# -- pull ------------------------------------------------------------------------------


async def pull(device, graph_id: str, sub_key: str, sub: dict) -> tuple[int, int]:
    """Pull one subscription page by page; returns (applied, refused). Each page that
    says ``more`` must advance the cursor, and one pull reads at most ``MAX_PAGES``
    (``simkit.client.paging``)."""
    sk = device.storage_key(graph_id)
    applied = refused = 0
    pages = Pages("pull", graph_id)
    while True:
        after = cursor = device.store.get("cursor", sub_key, 0)
        query = {"after": str(cursor), "limit": str(device.config.pull_limit)}
        if sub["kinds"]:
            query["kinds"] = ",".join(sub["kinds"])
        if sub["shards"]:
            query["shards"] = ",".join(sub["shards"])
        response = await device.request("GET", f"/graphs/{graph_id}/pull", query=query)
        if response.status != 200:
            device.last_error = f"pull {graph_id}: {response.status}"
            return applied, refused
        answer = response.json()
        device.note_epoch(graph_id, answer.get("epoch"))
        note_counter(device, graph_id, answer["cursor"], "pull answer", page=answer["more"])
        top = max((op["seq"] for op in answer["ops"]), default=0)
        device.served_top[graph_id] = max(device.served_top.get(graph_id, 0), top)
        newest = max((op["rev"] for op in answer["ops"]), default=0)
        needs_roster = answer["ops"] and device.roster(graph_id, newest) is None
        if needs_roster and await keyops.roster_or_defer(device, graph_id, cursor) is None:
            return applied, refused  # client rule 6: defer the batch, keep the cursor
        stopped_at = None
        # in seq order, whatever order the page came in: the cursor moves to each op's
        # seq, so an op out of order could carry it past one it must stop before (F16)
        for op in sorted(answer["ops"], key=lambda op: op["seq"]):
            outcome = await _receive(device, graph_id, sk, op, cursor)
            if outcome is NO_ROSTER:  # client rule 6: the rest of the batch waits
                stopped_at = op["seq"]
                break
            if outcome is None and not device.skip_missing_epoch():
                stopped_at = op["seq"]  # client rule 4: missing epoch, stop before this op
                device.emit("pull.stopped", graph_id, seq=stopped_at, epoch=op.get("e"))
                break
            if isinstance(outcome, Refusal):
                refused += 1
            elif outcome is not None:
                applied += 1
            cursor = op["seq"]
        if stopped_at is None:
            if answer["cursor"] < cursor and sub_key == graph_id:
                alarm(
                    device, graph_id, f"pull cursor went back from {cursor} to {answer['cursor']}"
                )
            cursor = max(cursor, answer["cursor"])
        device.store.put("cursor", sub_key, cursor)
        # a whole pull (to the relay's end, nothing stopped): the relay's counter was the
        # cursor, so a log entry beyond it came later and excuses none before it (F26)
        whole = stopped_at is None and not answer["more"]
        device.store.put("pulled", sub_key, {"cursor": cursor, "whole": whole})
        device.store.commit()  # the applied batch and its cursor become durable together
        spent = share_spent(device)
        if stopped_at is not None or not pages.another(after, cursor, answer["more"], spent):
            cut_short(device, pages)
            return applied, refused


NO_ROSTER = object()  # ``_receive``: the signer is unknown and the roster cannot be read


async def _receive(device, graph_id: str, sk: str, op: dict, cursor: int):
    """Open, check and apply one op (``cursor``: where its batch resumes if deferred).
    None means: no key for its epoch yet; NO_ROSTER: its signer is not in the cached
    roster and the roster cannot be read now, so the batch is deferred (client rule 6),
    never refused on a stale roster (F17)."""
    key = await _key_for(device, graph_id, op.get("e"))
    if key is None:
        return None
    roster = device.roster(graph_id) or {}
    outcome = device.check(op, sk, key, roster)
    if isinstance(outcome, Refusal) and outcome.reason == "unknown-device":
        roster = await keyops.roster_or_defer(device, graph_id, cursor)  # a signer newer than it?
        if roster is None:
            return NO_ROSTER
        outcome = device.check(op, sk, key, roster)
    if isinstance(outcome, Refusal):
        device.store.put(
            f"refused:{sk}", op["recordId"], {"rev": op["rev"], "reason": outcome.reason}
        )
        device.emit(
            "record.rejected", graph_id, recordId=op["recordId"], rev=op["rev"],
            reason=outcome.reason, detail=outcome.detail,
        )  # fmt: skip
        return outcome
    _apply(device, graph_id, sk, outcome.record)
    device.emit("record.applied", graph_id, recordId=op["recordId"], rev=op["rev"], seq=op["seq"])
    if outcome.device_id is not None:
        _possession_proof(device, roster[outcome.device_id])
        if outcome.record["kind"] == CHECKPOINT_KIND:
            _believe_checkpoint(device, graph_id, sk, outcome, roster)
    return outcome


async def _key_for(device, graph_id: str, epoch: int | None) -> bytes | None:
    """The key for an op's epoch, fetching keys once if it is missing (client rule 4)."""
    ring = device.keyring(graph_id)
    epoch = ring.current if epoch is None else epoch
    if epoch not in ring.keys:
        await keyops.refresh_keys(device, graph_id)
        ring = device.keyring(graph_id)
    return ring.keys.get(epoch)


def _apply(device, graph_id: str, sk: str, record: dict) -> None:
    """Client rule 3: take the relay's copy when local.at <= record.at and content differs.

    When a queued local write is newer, the relay's copy is kept aside (``shadow``):
    a clock repair may later re-stamp the write below it (``_restamp``).
    """
    rid = record["id"]
    held = device.store.get(f"records:{sk}", rid)
    if held is not None and held == record:
        return
    if held is not None and held["at"] > record["at"]:
        if device.store.get(f"queue:{sk}", rid) is not None:
            device.store.put(f"shadow:{sk}", rid, record)
            device.emit("lww.kept-local", graph_id, recordId=rid)
        return
    if held is not None and held["at"] == record["at"]:
        device.emit("lww.equal-rev", graph_id, recordId=rid, rev=record["at"])
    device.store.put(f"records:{sk}", rid, record)
    device.store.delete(f"refused:{sk}", rid)
    device.store.delete(f"shadow:{sk}", rid)
    queued = device.store.get(f"queue:{sk}", rid)
    if queued is not None and queued["r"]["at"] <= record["at"]:
        device.store.delete(f"queue:{sk}", rid)  # it lost: the relay keeps the winner


def _possession_proof(device, entry: dict) -> None:
    """A verified record from a device, plus its valid selfSig, approves it ('possession')."""
    device_id = entry["deviceId"]
    if device_id == device.device_id or device_id in device.selfsig_checked:
        return
    device.selfsig_checked.add(device_id)
    device.remember(entry)
    if device.pin(device_id) is None and self_sig_valid(entry):
        device.set_pin(device_id, APPROVED, "possession", fingerprint_of(entry))
        device.emit("device.approved", None, device=device_id, via="possession")


def _believe_checkpoint(device, graph_id, sk, opened: Opened, roster: dict) -> None:
    """Believe a checkpoint only if its slot is the one derived for ``d`` and its
    proven author owns ``d``."""
    data = opened.record["data"]
    claimed = data["d"]
    epoch1 = device.keyring(graph_id).keys.get(1)
    owner = roster.get(claimed, {}).get("memberId")
    if claimed == device.device_id or epoch1 is None or owner != opened.record["by"]:
        return
    if opened.record["id"] != checkpoint_record_id(epoch1, claimed):
        return
    log = device.log_state(graph_id)
    if log is None:
        return
    log = with_claim(log, claimed, data["seq"], data["head"])
    device.emit("checkpoint.believed", graph_id, device=claimed, seq=data["seq"])
    save_log(device, graph_id, log)
