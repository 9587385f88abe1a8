"""Log verification in a sync run: read the log up to the seq served, fold it, keep
the status; publish this device's checkpoint when one is due (docs/client.md, "Log
verification"). The relay's counter is judged here too: every answer's cursor."""

import attrs

from simkit.client.logverify import (
    ALARM,
    OK,
    LogState,
    due_checkpoint,
    fold,
    pruned_past,
    unverified,
    verified,
    was_served,
)
from simkit.client.paging import Pages, PagingStalled, cut_short, share_spent
from simkit.client.schemas import CHECKPOINT_KIND
from simkit.client.transport import RelayUnavailable
from simkit.protocol.derived import checkpoint_record_id


def save_log(device, graph_id: str, log: LogState) -> None:
    before = device.log_state(graph_id)
    device.store.put("log", device.storage_key(graph_id), log)
    if before is None or before.state != log.state:
        if log.state == ALARM:
            device.emit("log.alarm", graph_id, reason=log.alarm)
        elif log.state == OK:
            device.emit("log.ok", graph_id)


def note_counter(device, graph_id: str, cursor: int, what: str, page: bool = False) -> None:
    """The relay's counter never goes back. A push answer's cursor, and an exhausted
    pull's, state it; any answer's cursor is at or below it. So a statement below the
    highest cursor the relay ever answered this device is a contradiction, whether or
    not the device's own cursor got that far (a pull stopped or deferred leaves it
    behind: docs/findings.md, F15). ``page``: a page that says ``more`` states only
    where it stopped."""
    seen = device.store.get("counter", graph_id, 0)
    if cursor > seen:
        device.store.put("counter", graph_id, cursor)
    elif cursor < seen and not page and device.unfiltered(graph_id):
        alarm(device, graph_id, f"{what} cursor {cursor} is below seq {seen} served")


def alarm(device, graph_id: str, why: str) -> None:
    log = device.log_state(graph_id) or LogState.start(device.storage_key(graph_id), 0)
    save_log(device, graph_id, log.alarmed(why))


async def verify_log(device, graph_id: str) -> None:
    """Fold the log up to the seq served to the unfiltered subscription; log checks (1) and (2)."""
    sk = device.storage_key(graph_id)
    served = device.store.get("cursor", graph_id, 0)
    log = device.log_state(graph_id)
    if log is None:  # started late: anchored mid-log when records were already served
        log = LogState.start(sk, served)
        if log.anchored_from is not None:
            device.emit("log.anchored", graph_id, seq=served)
    records, refusals = device.store.rows(f"records:{sk}"), device.store.rows(f"refused:{sk}")

    def held_rev(record_id):
        return records[record_id]["at"] if record_id in records else None

    def refused_rev(record_id):
        return refusals[record_id]["rev"] if record_id in refusals else None

    def is_checkpoint(record_id):
        return record_id in records and records[record_id]["kind"] == CHECKPOINT_KIND

    # A record with a later entry beyond the seq served may have moved past a pull that
    # stopped early, which was then never served its older version (F8); after a whole
    # pull to that seq no record could have (docs/findings.md, F26), so every entry up to
    # it can be judged, however far the read got (F40).
    pulled = device.store.get("pulled", graph_id)
    whole = pulled is not None and pulled["whole"] and pulled["cursor"] == served

    def folded(log, entries, read, waiting, ended):
        moved = (
            frozenset() if whole else frozenset(e["recordId"] for e in entries if e["seq"] > served)
        )
        # A read cut short (its page limit, or the relay out of reach) folds only what it
        # read, and leaves unjudged an entry whose record may have moved beyond it
        # (docs/findings.md, F8 and F10); so does a read that went on past ``served`` for
        # a waiting record's later entry and stopped before it found one or the log's end.
        upto = min(served, read)
        partial = not whole and (upto < served or bool(waiting and not ended))
        return fold(log, entries, upto, held_rev, refused_rev, is_checkpoint, moved, partial)

    entries = []
    after = read = log.through
    pages = Pages("log", graph_id)
    unavailable = stalled = None
    waiting = None  # records named up to ``served`` in versions not served, no later entry yet
    unjudged = False  # an entry read up to ``served`` names a version not served
    ended = False  # the last page read was the log's end (no ``more``)
    while log.state != ALARM and log.through < served:
        query = {"after": str(after), "limit": str(device.config.log_page)}
        try:
            response = await device.request("GET", f"/graphs/{graph_id}/log", query=query)
        except RelayUnavailable as exc:  # keep what was read: the next run reads on (F10)
            unavailable = exc
            break
        if response.status != 200:  # e.g. an older relay without the log route
            if response.status != 404:  # which the log status says; anything else is surfaced
                device.last_error = f"log {graph_id}: {response.status}"
            save_log(device, graph_id, unverified(log))
            return
        answer = response.json()
        top = max(log.last_seq, device.served_top.get(graph_id, 0))
        if answer["head"] < top:  # the log lacks an entry it served, or an op's write (F41)
            log = log.alarmed(f"log head {answer['head']} is below seq {top} it served")
            break
        if answer["oldest"] > after + 1:  # pruned past what the device folded: anchor,
            log = folded(log, entries, read, waiting, False)  # once what it read is judged (F40)
            if log.state == ALARM:
                break
            log, entries, unjudged, waiting = pruned_past(log, answer["oldest"]), [], False, None
            device.emit("log.anchored", graph_id, seq=log.anchored_from)
        kept, read_before = len(entries), read
        entries.extend(answer["entries"])
        ended = not answer["more"]
        unjudged = unjudged or any(
            e["seq"] <= served and not was_served(e, held_rev, refused_rev)
            for e in answer["entries"]
        )
        end = answer["entries"][-1]["seq"] if answer["entries"] else after
        read = served if not answer["more"] else end  # every entry up to here is in hand
        if end >= served:  # read on only while an entry waits on a later one (F11)
            if waiting is None:
                waiting = {
                    e["recordId"]
                    for e in entries
                    if e["seq"] <= served and not was_served(e, held_rev, refused_rev)
                }
            waiting.difference_update(e["recordId"] for e in answer["entries"] if e["seq"] > served)
            if not waiting:
                read = served
                break
        # A read holding an entry it cannot judge yet reads on whatever the run's time:
        # the fold stops before that entry, so stopped here, the next run would read the
        # same pages again and never get further (docs/findings.md, F30).
        try:
            if not pages.another(after, end, answer["more"], share_spent(device) and not unjudged):
                break
        except PagingStalled as exc:  # keep what the earlier pages and the anchor brought (o6)
            stalled, entries, read = exc, entries[:kept], read_before
            break
        after = end
    cut_short(device, pages)
    log = folded(log, entries, read, waiting, ended)
    if log.through >= served:
        log = verified(log)
    save_log(device, graph_id, log)
    if unavailable is not None or stalled is not None:
        raise unavailable or stalled


def publish_checkpoint(device, graph_id: str) -> bool:
    """Queue this device's head at the newest boundary reached (docs/client.md)."""
    log = device.log_state(graph_id)
    epoch1 = device.keyring(graph_id).keys.get(1)
    active = device.active_devices(graph_id)
    boundary = due_checkpoint(log, device.device_id, active) if log else None
    if boundary is None or epoch1 is None:
        return False
    slot = checkpoint_record_id(epoch1, device.device_id)
    data = {"v": 1, "d": device.device_id, "seq": boundary, "head": log.heads[str(boundary)]}
    record = device.write_record(graph_id, slot, {"kind": CHECKPOINT_KIND, "data": data})
    device.emit("checkpoint.published", graph_id, seq=boundary, recordId=slot, rev=record["at"])
    save_log(device, graph_id, attrs.evolve(log, published=boundary))
    device.store.commit()
    return True
