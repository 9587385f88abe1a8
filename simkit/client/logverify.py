"""Log verification (spec: Log rules, Client verification, Checkpoint rules).

Per graph, a device folds the relay's log into the chain over the entries present
and checks, only up to the seq actually served to it: log check (1), every entry
names a record it holds at that rev or newer, unless it refused that record on
purpose; log check (2), its chain head at each checkpoint boundary equals what
other devices signed for that boundary. Any contradiction latches ``alarm``.
"""

import hashlib
from collections.abc import Callable

import attrs

from simkit.protocol.logchain import CHECKPOINT_STRIDE, log_genesis, log_step

OFF, UNVERIFIED, OK, ALARM = "off", "unverified", "ok", "alarm"


@attrs.frozen
class LogState:
    """What a device persists about one graph's log.

    Frozen and stored as is (its dicts are replaced, never mutated), so saving it
    costs nothing: a device saves it once per checkpoint it receives.
    """

    state: str
    head: str
    through: int = 0  # every entry with seq <= through has been folded
    last_seq: int = 0  # the seq of the last entry folded (the log's head can't be below it)
    last_app_seq: int = 0  # the seq of the last entry naming an application record
    anchored_from: int | None = None  # set when the chain starts mid-log
    heads: dict = attrs.Factory(dict)  # boundary (str) -> head, once final
    claims: dict = attrs.Factory(dict)  # peer device -> {"seq": boundary, "head": head}
    published: int = 0  # the last boundary this device published
    alarm: str | None = None

    @classmethod
    def start(cls, storage_key: str, served: int) -> "LogState":
        """A fresh chain; anchored mid-log when records were already served without it."""
        if served == 0:
            return cls(UNVERIFIED, log_genesis(storage_key))
        return cls(UNVERIFIED, f"anchor:{served}", through=served, anchored_from=served)

    def alarmed(self, why: str) -> "LogState":
        return self if self.state == ALARM else attrs.evolve(self, state=ALARM, alarm=why)


def fold(
    log: LogState,
    entries: list[dict],
    upto: int,
    held_rev: Callable[[str], float | None],
    refused_rev: Callable[[str], float | None],
    is_checkpoint: Callable[[str], bool] = lambda record_id: False,
    moved: frozenset[str] = frozenset(),
    partial: bool = False,
) -> LogState:
    """Fold entries with ``through < seq <= upto``; log check (1) on each.

    ``entries`` must hold every log entry up to ``upto`` (a complete page), so
    boundaries up to ``upto`` become final. ``held_rev(id)`` is the rev the device
    holds, ``refused_rev(id)`` the rev it refused on purpose (or None). ``moved``
    names records with a later log entry beyond ``upto``: the relay serves a record's
    current version only, so a device whose pull stopped early (client rule 4) was never
    served the older versions those entries name. ``partial``: the read stopped at
    its page limit before the log's end, so a later entry of a record may lie beyond
    it; the fold then stops before an entry it cannot judge yet, and the next read
    goes on from there (docs/findings.md, F8).
    """
    if log.state == ALARM:
        return log
    seqs = [entry["seq"] for entry in entries]
    if any(later <= earlier for earlier, later in zip([log.through, *seqs], seqs, strict=False)):
        return log.alarmed(f"log entries are not in increasing seq order after {log.through}")
    head, through, last_seq, fresh = log.head, log.through, log.last_seq, {}
    last_app_seq = log.last_app_seq
    for entry in entries:
        seq, record_id, rev = entry["seq"], entry["recordId"], entry["rev"]
        if seq > upto:
            break
        served = was_served(entry, held_rev, refused_rev)
        if not served and record_id not in moved and partial:
            upto = seq - 1  # judged once a read reaches past this record's later entries
            break
        if not served and record_id not in moved:
            return log.alarmed(
                f"log entry seq {seq} names {record_id!r} at rev {rev}, which was never served"
            )
        if log.anchored_from is None:
            fresh.update(_final_boundaries(last_seq, seq - 1, head))
        head, through, last_seq = log_step(head, seq, record_id, rev), seq, seq
        if not is_checkpoint(record_id):
            last_app_seq = seq
    if log.anchored_from is None:
        fresh.update(_final_boundaries(last_seq, upto, head))
    if head == log.head and max(through, upto) == log.through and not fresh:
        return log  # nothing new (an idle device's every read): no copy
    folded = attrs.evolve(
        log,
        head=head,
        through=max(through, upto),
        last_seq=last_seq,
        last_app_seq=last_app_seq,
        heads={**log.heads, **fresh} if fresh else log.heads,
    )
    if fresh:  # log check (2) for the claims at boundaries that just became final
        for device_id, claim in sorted(log.claims.items()):
            if str(claim["seq"]) in fresh:
                folded = _compare(folded, device_id, claim["seq"], claim["head"])
    return folded


def was_served(
    entry: dict,
    held_rev: Callable[[str], float | None],
    refused_rev: Callable[[str], float | None],
) -> bool:
    """Log check (1) for one entry: the device holds its record at that rev or newer, or
    refused that version (or a newer one) on purpose."""
    held, refused = held_rev(entry["recordId"]), refused_rev(entry["recordId"])
    rev = entry["rev"]
    return (held is not None and held >= rev) or (refused is not None and refused >= rev)


def _final_boundaries(lo: int, hi: int, head: str) -> dict:
    """Boundaries B with lo <= B <= hi (B > 0) have ``head``: it folds every entry <= B.

    ``lo`` is the last folded seq, so a boundary equal to an entry's seq includes it.
    """
    first = max(CHECKPOINT_STRIDE, -(-lo // CHECKPOINT_STRIDE) * CHECKPOINT_STRIDE)
    return {str(b): head for b in range(first, hi + 1, CHECKPOINT_STRIDE)}


def with_claim(log: LogState, device_id: str, boundary: int, head: str) -> LogState:
    """Remember a believed peer checkpoint (the latest one per peer device) and run
    log check (2) against it at once if our head at that boundary is final."""
    log = attrs.evolve(log, claims={**log.claims, device_id: {"seq": boundary, "head": head}})
    return _compare(log, device_id, boundary, head)


def _compare(log: LogState, device_id: str, boundary: int, head: str) -> LogState:
    """Log check (2) for one claim: alarm when the peer's head differs from ours at a
    boundary we both have. A chain anchored mid-log never compares heads."""
    if log.anchored_from is not None or log.state == ALARM:
        return log
    ours = log.heads.get(str(boundary))
    if ours is not None and ours != head:
        return log.alarmed(
            f"head at boundary {boundary} differs from the checkpoint of {device_id!r}"
        )
    return log


def pruned_past(log: LogState, oldest: int) -> LogState:
    """Log verification status: ``ok -> unverified`` when the log was pruned past the
    device: the lowest entry the relay keeps is above the next one the device needs, so
    entries between may be gone (or may never have been: a refused op spends a seq, and
    the device cannot tell; folding on would give a chain its peers never had). The
    chain starts again where the kept log starts, anchored there: it folds forward but
    is never ``ok``, never compared with a peer's head, never published."""
    if log.state == ALARM:
        return log
    at = oldest - 1
    return attrs.evolve(
        log, state=UNVERIFIED, head=f"anchor:{at}", through=at, anchored_from=at, heads={}
    )


def unverified(log: LogState) -> LogState:
    """Back to ``unverified`` (relay unreachable, log route missing); alarm stays."""
    return log if log.state == ALARM else attrs.evolve(log, state=UNVERIFIED)


def verified(log: LogState) -> LogState:
    """After a clean pass: ``ok``, unless anchored mid-log (never ``ok`` then)."""
    if log.state in (ALARM, OK) or log.anchored_from is not None:
        return log
    return attrs.evolve(log, state=OK)


PUBLISHERS_PER_BOUNDARY = 8


def takes_turn(device_id: str, boundary: int, active_devices: int) -> bool:
    """Whether ``device_id`` is one of about eight devices that publish ``boundary``.

    Every device publishing every boundary costs n^2 deliveries per 64 seqs and, in a
    busy group of a hundred, fills the log with checkpoints. The turn is a hash of
    (device, boundary), so the publishers change from boundary to boundary and every
    device compares its head with each of them (docs/client.md).
    """
    share = -(-active_devices // PUBLISHERS_PER_BOUNDARY)
    if share <= 1:
        return True
    turn = hashlib.sha256(f"skm-checkpoint-turn\n{device_id}\n{boundary}".encode()).digest()
    return int.from_bytes(turn[:8], "big") % share == 0


def newest_boundary(log: LogState) -> int:
    """The newest final boundary. ``fold`` makes every boundary up to ``through`` final,
    so it is found by arithmetic, not by a scan of ``heads`` (which grows all day)."""
    return log.through - log.through % CHECKPOINT_STRIDE


def due_checkpoint(log: LogState, device_id: str, active_devices: int) -> int | None:
    """The boundary to publish next: the newest one reached, if an application record
    was logged since the last one published and it is this device's turn. Checkpoints
    alone never cause another round of checkpoints, or n devices would keep crossing
    boundaries for ever. An alarmed device still publishes the heads it folded before
    the alarm, so that the peers on the other side of a fork learn of it too."""
    if log.anchored_from is not None or not log.heads:
        return None
    latest = newest_boundary(log)
    if latest <= log.published or log.last_app_seq <= log.published:
        return None
    return latest if takes_turn(device_id, latest, active_devices) else None
