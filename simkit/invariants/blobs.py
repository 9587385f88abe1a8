"""blob-policies: each retention policy keeps a blob exactly as long as it promises."""

from simkit.invariants.base import Invariant
from simkit.sim.clock import relay_time_ms


class BlobPolicies(Invariant):
    """A blob ID is immutable; ``retain`` blobs leave only by DELETE; an ``ephemeral``
    blob is never forgotten before its ttl and is gone within two sweep intervals
    after it; a ``transport`` blob is never forgotten before every current member
    has a receipt and is gone within two sweep intervals after that (the sweeper
    re-checks against the current members). Honest relay only. A relay restart (after
    an outage, or into a new version: an upgrade, F35) restarts the sweeper's schedule,
    so the "gone" half waits two intervals after the relay is back."""

    name = "blob-policies"
    honest_only = True
    observes = ("blob.forgotten", "crash", "version.upgrade")

    def __init__(self) -> None:
        self._blobs: dict[tuple[str, str], object] = {}  # (storage key, blob ID) -> Blob
        self._forgotten: dict[tuple[str, str], tuple[str, float]] = {}
        self._relay_back = 0.0
        self._delivered: dict[tuple[str, str], int] = {}  # first seen with every receipt

    def observe(self, world, event):
        fields = event.fields
        if event.kind == "crash" or fields.get("name") == "version.upgrade":
            # an upgrade's event says no "what": it is a restart like "relay-restart"
            if event.actor == "relay" and fields.get("what", "relay-restart") == "relay-restart":
                self._relay_back = event.t
            return ()
        key = (fields["graph"], fields["blob_id"])
        self._forgotten[key] = (fields["reason"], event.t, tuple(fields.get("receipts", ())))
        return ()

    def step(self, world):
        out = []
        now = {
            (sk, blob_id): blob
            for sk, graph in world.relay.state.graphs.items()
            for blob_id, blob in graph.blobs.items()
        }
        for key, before in sorted(self._blobs.items()):
            after = now.get(key)
            if after is None:
                out.extend(self._gone(world, key, before))
            elif (after.data, after.nonce, after.policy, after.expires_at) != (
                before.data,
                before.nonce,
                before.policy,
                before.expires_at,
            ):
                out.append(self._v(world, key, "changed after upload (a blob ID is immutable)"))
        self._blobs = now
        self._forgotten.clear()
        out.extend(self._overdue(world))
        return out

    final = step

    def _gone(self, world, key, blob):
        why = self._forgotten.get(key)
        if why is None:
            return [self._v(world, key, f"({blob.policy}) vanished without being forgotten")]
        reason, t, receipts = why
        at = relay_time_ms(t)
        if reason == "expired" and (blob.expires_at is None or at < blob.expires_at):
            return [self._v(world, key, f"({blob.policy}) was expired before its ttl")]
        if reason == "acked" and (
            blob.policy != "transport" or not _delivered(world, key[0], receipts)
        ):
            return [self._v(world, key, f"({blob.policy}) was forgotten before every receipt")]
        return []

    def _overdue(self, world):
        """Ephemeral blobs past their ttl and transport blobs every member received,
        still there two sweep intervals later (while the relay has been up)."""
        interval = world.relay.settings.sweep_interval_ms
        now_ms = relay_time_ms(world.now())
        delivered = {
            key
            for key, blob in self._blobs.items()
            if blob.policy == "transport" and _delivered(world, key[0], blob.receipts)
        }
        # a member who joins before the sweep owes a receipt again: the clock restarts
        self._delivered = {k: self._delivered.get(k, now_ms) for k in sorted(delivered)}
        if not interval or not world.relay_up:
            return []
        up_since = relay_time_ms(self._relay_back)
        out = []
        for key, blob in sorted(self._blobs.items()):
            if blob.policy == "ephemeral":
                due, what = blob.expires_at, "its ttl"
            elif key in self._delivered:
                due, what = self._delivered[key], "every receipt"
            else:
                continue
            late = now_ms - max(due, up_since)
            if late > 2 * interval:
                out.append(
                    self._v(world, key, f"({blob.policy}) is still kept {late} ms after {what}")
                )
        return out

    def _v(self, world, key, what):
        return self.violation(world, f"blob {key[1]} {what}", graph=key[0])


def _delivered(world, sk: str, receipts) -> bool:
    """Every current member (the owner, both parties, or the group's active members)
    holds a receipt."""
    kind, _, rest = sk.partition(":")
    if kind == "g":
        members = {m for m in world.host.group_members(rest) if world.host.is_active(m)}
    else:
        members = set(rest.split(":"))
    return members <= set(receipts)
