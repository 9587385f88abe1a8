"""Settings: the spec's limits are defaults; stricter is allowed, looser is refused."""

import pytest
from relay_helpers import Clock, Harness, error, op

from simkit.errors import SimkitError
from simkit.protocol.limits import SPEC_LIMITS
from simkit.relay import RateLimit, Relay, RelaySettings, RelaySettingsError, StaticHost


def test_settings_default_to_the_spec_limits():
    settings = RelaySettings()
    assert {name: getattr(settings, name) for name in SPEC_LIMITS} == {
        "max_ciphertext_chars": 700_000,
        "max_ops_per_push": 200,
        "max_push_bytes": 8 * 1024 * 1024,
        "max_pull_limit": 500,
        "max_blob_bytes": 25 * 1024 * 1024,
        "max_rev_skew_ms": 300_000,
        "max_blob_ttl_ms": 30 * 24 * 3600 * 1000,
    }
    assert settings.sweep_interval_ms == 60_000


@pytest.mark.parametrize("name", sorted(SPEC_LIMITS))
def test_settings_looser_than_the_spec_are_refused(name):
    with pytest.raises(RelaySettingsError, match="looser than the spec"):
        Relay(StaticHost([]), Clock(), **{name: SPEC_LIMITS[name] + 1})
    assert issubclass(RelaySettingsError, SimkitError)


@pytest.mark.parametrize(
    "settings",
    [{"max_ops_per_push": 0}, {"max_pull_limit": True}, {"quota_records": -1},
     {"quota_records": 0}, {"quota_bytes": 0}, {"quota_blob_bytes": 0},
     {"sweep_interval_ms": -1}, {"rate_limits": {"reads": RateLimit(1, 1)}},
     {"rate_limits": {"read": RateLimit(0, 1)}}, {"rate_limits": {"read": (1, 1)}}],
)  # fmt: skip
def test_settings_malformed_are_refused(settings):
    with pytest.raises(RelaySettingsError):
        RelaySettings(**settings)


def test_settings_stricter_are_enforced():
    h = Harness(max_ops_per_push=2, max_ciphertext_chars=4, max_rev_skew_ms=1)
    h.register("alice", "a1")
    assert error(h.push("u", [op("r1", 1)] * 3)) == "invalid"
    assert error(h.push("u", [op("r1", 1, c="AAAAA")])) == "invalid"
    rejected = h.push("u", [op("r1", h.clock.now + 2, c="AAAA")]).json()["rejected"]
    assert rejected == [{"recordId": "r1", "reason": "rev-too-far-ahead"}]


def test_settings_empty_rate_limits_disable_rate_limiting():
    h = Harness(rate_limits={})
    h.register("alice", "a1")
    assert all(h.call("GET", "/devices").status == 200 for _ in range(500))
