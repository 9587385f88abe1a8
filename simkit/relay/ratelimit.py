"""Per-member, per-bucket token buckets on the relay's injected clock (spec: Authentication).

The buckets are volatile, like a real server's in-memory limiter: they are not
part of ``RelayState``, so a restart refills them and a refused request's
spent token never shows up as a state change.
"""

from collections.abc import Mapping

from simkit.protocol.limits import RateLimit


class RateLimiter:
    """Integer token buckets, so a run is exact and deterministic.

    A bucket's level is kept in token-milliseconds: one token is ``refill_ms``
    units and every elapsed millisecond adds one unit, up to ``burst`` tokens.
    """

    def __init__(self, limits: Mapping[str, RateLimit]) -> None:
        self._limits = limits
        self._levels: dict[tuple[str, str], tuple[int, int]] = {}

    def take(self, member_id: str, bucket: str, now: int) -> int:
        """Spend one token; return 0 when allowed, else the milliseconds until one is back."""
        limit = self._limits.get(bucket)
        if limit is None:
            return 0
        full = limit.burst * limit.refill_ms
        level, at = self._levels.get((member_id, bucket), (full, now))
        level = min(full, level + max(0, now - at))
        if level < limit.refill_ms:
            self._levels[member_id, bucket] = (level, now)
            return limit.refill_ms - level
        self._levels[member_id, bucket] = (level - limit.refill_ms, now)
        return 0
