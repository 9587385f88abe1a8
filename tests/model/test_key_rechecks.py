"""docs/client.md, "Key rechecks": a device reads a graph's key gaps at a boot's first
run, at a user's "sync now" and then once ``recheck_s`` has passed on its own clock; the
device model catches a device that reads them again sooner (the same work twice), and
excuses what the spec and the client's documented choices allow."""

from simkit.model.device import App, DeviceModel, Identity
from tests.model.test_device_model import ME, T0, ok, request


def model(recheck_s: float = 30.0) -> DeviceModel:
    identity = Identity("alice", "a1", ME.wrap_key, ME.sig_jwk)
    return DeviceModel(identity, App(lambda kind, data: True, recheck_s=recheck_s))


def gaps_read(m: DeviceModel, at_s: float, task="t") -> None:
    """The device reads the key gaps of g:team when its clock shows T0 + ``at_s``."""
    at_ms = T0 + int(at_s * 1000)
    req = request("GET", "/graphs/g:team/keygaps")
    m.sent(task, req, at_s, lambda: at_ms)
    m.received(task, req, ok({"latestEpoch": 1, "gaps": []}), at_s, lambda: at_ms)


def keys_answer(m: DeviceModel, rotation_required: bool, at_s: float) -> None:
    req = request("GET", "/graphs/g:team/keys")
    m.sent("t", req, at_s)
    answer = {"latestEpoch": 1, "rotationRequired": rotation_required, "wraps": []}
    m.received("t", req, ok(answer), at_s, lambda: T0)


def rules(m: DeviceModel) -> list[str]:
    return [f.rule for f in m.findings]


def test_key_gaps_read_once_per_recheck_hold():
    m = model()
    for at in (0.0, 30.0, 61.0, 95.0):
        gaps_read(m, at)
    assert not m.findings


def test_key_gaps_read_at_every_run_are_the_same_work_twice():
    m = model()
    gaps_read(m, 0.0)
    gaps_read(m, 5.0)  # the next poll's run: 5 s, not 30
    assert rules(m) == ["ceremony: link"]
    assert "5.000 s after it last did" in m.findings[0].detail


def test_a_recheck_read_in_milliseconds_is_caught_whatever_the_poll():
    m = model(recheck_s=5.0)
    gaps_read(m, 0.0)
    gaps_read(m, 0.5)
    assert rules(m) == ["ceremony: link"]


def test_a_boot_and_a_sync_now_read_at_once():
    m = model()
    gaps_read(m, 0.0)
    m.crashed()
    m.restarted()
    gaps_read(m, 2.0)  # a boot's first run
    m.sync_now()
    gaps_read(m, 3.0)  # a run under way
    gaps_read(m, 3.5)  # the user's run
    assert not m.findings
    gaps_read(m, 4.0)
    assert rules(m) == ["ceremony: link"]


def test_a_rotation_turn_reads_key_gaps_while_the_relay_asks_for_a_rotation():
    m = model()
    gaps_read(m, 0.0)
    keys_answer(m, True, 1.0)
    for at in (2.0, 7.0, 12.0):  # each run at its turn asks who lacks the latest key
        gaps_read(m, at)
    assert not m.findings
    keys_answer(m, False, 13.0)  # another task rotated: a turn under way reads on once
    gaps_read(m, 14.0)
    assert not m.findings
    gaps_read(m, 15.0)
    assert rules(m) == ["ceremony: link"]


def test_a_clock_stepped_back_makes_the_recheck_due():
    m = model()
    gaps_read(m, 10.0)
    gaps_read(m, 2.0)  # the device's clock reads 8 s earlier than at the last read
    assert not m.findings


def test_a_retry_of_a_failed_key_gaps_read_is_not_a_recheck():
    m = model()
    req = request("GET", "/graphs/g:team/keygaps")
    gaps_read(m, 0.0)
    m.crashed()
    m.restarted()
    m.sent("t", req, 40.0, lambda: T0 + 40_000)
    m.lost("t", req, 40.1)
    m.sent("t", req, 40.6, lambda: T0 + 40_600)  # the retry
    assert not m.findings
