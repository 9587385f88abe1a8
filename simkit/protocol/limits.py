"""Relay settings: the spec's normative limits as defaults, plus quotas and rate limits.

The spec lets a relay be stricter than its Limits table, never looser, so a
setting above its normative value is refused when the relay is built rather
than discovered in a simulation.
"""

from collections.abc import Mapping

import attrs

from simkit.errors import SimkitError

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
MINUTE_MS = 60_000
DAY_MS = 24 * 60 * MINUTE_MS

# Normative maxima from the spec's Limits table (name of the setting -> value).
SPEC_LIMITS: Mapping[str, int] = {
    "max_ciphertext_chars": 700_000,
    "max_ops_per_push": 200,
    "max_push_bytes": 8 * MiB,
    "max_pull_limit": 500,
    "max_blob_bytes": 25 * MiB,
    "max_rev_skew_ms": 5 * MINUTE_MS,
    "max_blob_ttl_ms": 30 * DAY_MS,
}


class RelaySettingsError(SimkitError, ValueError):
    """A relay setting is malformed or looser than the spec allows."""


@attrs.frozen
class RateLimit:
    """A token bucket: ``burst`` requests at once, then one more every ``refill_ms``."""

    burst: int
    refill_ms: int


# Buckets a route can charge (see simkit.relay.routing). Generous on purpose: a
# member with five devices each syncing every two seconds uses well under half.
BUCKETS = ("read", "write", "blob")
DEFAULT_RATE_LIMITS: Mapping[str, RateLimit] = {
    "read": RateLimit(burst=200, refill_ms=50),  # 20 requests/s sustained
    "write": RateLimit(burst=100, refill_ms=100),  # 10 requests/s sustained
    "blob": RateLimit(burst=50, refill_ms=200),  # 5 requests/s sustained
}


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _not_looser(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    spec = SPEC_LIMITS[attribute.name]
    if not _count(value) or value < 1:
        raise RelaySettingsError(f"{attribute.name} must be a positive integer, got {value!r}")
    if value > spec:
        raise RelaySettingsError(
            f"{attribute.name}={value} is looser than the spec's {spec}; "
            "a relay may be stricter than the spec, never looser"
        )


def _positive(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not _count(value) or value < 1:
        raise RelaySettingsError(f"{attribute.name} must be a positive integer, got {value!r}")


def _sweep_interval(_instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not _count(value) or value < 0:
        raise RelaySettingsError(
            f"{attribute.name} must be a whole number of milliseconds >= 0 (0 disables), "
            f"got {value!r}"
        )


def _rate_limits(_instance: object, attribute: attrs.Attribute, value: Mapping) -> None:
    for name, limit in value.items():
        if name not in BUCKETS:
            raise RelaySettingsError(f"unknown rate-limit bucket {name!r}; buckets are {BUCKETS}")
        if not (
            isinstance(limit, RateLimit)
            and _count(limit.burst)
            and _count(limit.refill_ms)
            and limit.burst >= 1
            and limit.refill_ms >= 1
        ):
            raise RelaySettingsError(
                f"rate limit {name!r} must be RateLimit(burst>=1, refill_ms>=1), got {limit!r}"
            )


def _spec(name: str) -> int:
    return attrs.field(default=SPEC_LIMITS[name], validator=_not_looser)


@attrs.frozen(kw_only=True)
class RelaySettings:
    """Every tunable of the relay, with the spec's values (or simkit's) as defaults.

    Quotas and rate limits have no values in the spec; the defaults are simkit's
    (docs/relay.md, Limits). ``rate_limits={}`` disables rate limiting and
    ``sweep_interval_ms=0`` disables the built-in sweeper.
    """

    max_ciphertext_chars: int = _spec("max_ciphertext_chars")
    max_ops_per_push: int = _spec("max_ops_per_push")
    max_push_bytes: int = _spec("max_push_bytes")
    max_pull_limit: int = _spec("max_pull_limit")
    max_blob_bytes: int = _spec("max_blob_bytes")
    max_rev_skew_ms: int = _spec("max_rev_skew_ms")
    max_blob_ttl_ms: int = _spec("max_blob_ttl_ms")
    quota_records: int = attrs.field(default=1_000_000, validator=_positive)
    quota_bytes: int = attrs.field(default=1 * GiB, validator=_positive)
    quota_blob_bytes: int = attrs.field(default=10 * GiB, validator=_positive)
    rate_limits: Mapping[str, RateLimit] = attrs.field(
        factory=lambda: dict(DEFAULT_RATE_LIMITS), converter=dict, validator=_rate_limits
    )
    sweep_interval_ms: int = attrs.field(default=MINUTE_MS, validator=_sweep_interval)
    # Log pruning, a relay's choice ("log pruned past the device"): the log route keeps
    # the newest ``log_keep`` entries of each graph (None: the whole log; docs/relay.md).
    log_keep: int | None = attrs.field(default=None, validator=attrs.validators.optional(_positive))
