"""The device model judges what a device says (Events rule 4: client-side events; Events
rule 5 and Linking status: status fields; client rule 2: the reason of a refusal) and
when it retries (client rule 10 with docs/client.md's backoff), on hand-built inputs.
Each test shows the slip found and the honest path passing."""

import pytest

from simkit.model.device import Changes, Pin
from simkit.model.device.timing import nominal_wait
from tests.model.test_device_model import (
    CLOCK,
    SK,
    T0,
    keyed,
    model,
    ok,
    op,
    pulled,
    record,
    request,
    rostered,
    rules,
)

WHOLE = {("g:team", (), ()): True}  # the device follows g:team unfiltered
PULL = request("GET", "/graphs/g:team/pull", after=0, limit=500)


def failed_and_retried(m, waits, start: float = 1.0, req=PULL, task="t") -> None:
    """``req`` fails with a 503, then is retried after each wait in ``waits`` in turn."""
    now = start
    m.sent(task, req, now)
    for wait in waits:
        m.received(task, req, ok({"error": "unavailable"}, 503), now + 0.1, CLOCK)
        now += 0.1 + wait
        m.sent(task, req, now)


@pytest.mark.parametrize(
    ("waits", "found"),
    [
        ((0.3, 0.7, 1.5, 3.0), False),  # half to all of 0.5, 1, 2, 4 s
        ((0.0,), True),  # at once
        ((15.0,), True),  # a thousand-fold unit slip, capped at 30 s
        ((0.3, 0.3, 0.3), True),  # a backoff that never grows
    ],
)
def test_client_rule_10_each_retry_waits_its_backoff(waits, found):
    m = model()
    failed_and_retried(m, waits)
    assert ("client rule 10" in rules(m)) is found


def test_client_rule_10_attempts_are_bounded():
    m = model()
    failed_and_retried(m, [(0.5 + k / 10) * nominal_wait(k) for k in range(1, 5)])
    assert rules(m) == []
    m.received("t", PULL, ok({"error": "unavailable"}, 503), 100.0, CLOCK)
    m.sent("t", PULL, 110.0)  # given up; the application tries its step again 10 s later
    assert rules(m) == []
    failed_and_retried(m, [(0.5 + k / 20) * nominal_wait(k) for k in range(1, 6)], start=200.0)
    assert rules(m) == ["client rule 10"]  # a sixth attempt, when a retry would come


@pytest.mark.parametrize(("then", "found"), [("again", True), ("other", False), ("run", False)])
def test_client_rule_10_other_4xx_are_not_retried(then, found):
    m = model()
    m.sent("t", PULL, 1.0)
    m.received("t", PULL, ok({"error": "not-member"}, 403), 1.1, CLOCK)
    if then == "run":
        m.ran("g:team", None, "pull g:team: 403", "t")  # the run ended: a later one asks again
    else:
        m.sent("t", request("GET", "/graphs/g:team/keys"), 1.2) if then == "other" else None
    if then == "again":
        m.said("retry", None, {"why": "403"}, "t")  # the transport retries it
    m.sent("t", PULL, 1.4)
    assert ("client rule 10" in rules(m)) is found


@pytest.mark.parametrize(("share", "found"), [(None, False), (0.75, True)])
def test_client_rule_10_backoff_is_jittered(share, found):
    m = model()
    for n in range(6):
        wait = 0.5 * (share if share else 0.55 + 0.07 * n)
        req = request("GET", "/graphs/g:team/pull", after=n, limit=500)
        failed_and_retried(m, [wait], start=10.0 * n, req=req)
    assert ("client rule 10" in rules(m)) is found


def test_events_rule_4_linking_unenforced_only_in_observe_mode_once_per_boot():
    observe = model("observe")
    observe.said("linking.unenforced", None, {})
    assert rules(observe) == []
    observe.said("linking.unenforced", None, {})
    assert rules(observe) == ["events rule 4"]
    approve = model("approve")
    approve.said("linking.unenforced", None, {})
    assert rules(approve) == ["events rule 4"]


@pytest.mark.parametrize(("pin", "found"), [(None, False), ("rejected", True), ("approved", True)])
def test_events_rule_4_device_pending_only_for_a_device_with_no_pin(pin, found):
    m = model("approve")
    if pin:
        m.committed(Changes(pins={"b1": Pin(pin, "human", "fp")}), CLOCK)
    m.said("device.pending", "g:team", {"device": "b1", "member": "bob"})
    assert ("events rule 4" in rules(m)) is found


@pytest.mark.parametrize(("state", "handed", "found"), [
    ("conflicted", "other", False), ("approved", "other", True), ("conflicted", "same", True),
])  # fmt: skip
def test_events_rule_4_device_conflict_only_when_published_keys_changed(state, handed, found):
    m = model("approve")
    m.committed(Changes(pins={"b1": Pin("approved", "human", "fp")}), CLOCK)
    m.triples["b1"].update({"fp", "fp2"} if handed == "other" else {"fp"})
    if state == "conflicted":
        m.committed(Changes(pins={"b1": Pin("conflicted", "human", "fp")}), CLOCK)
    m.said("device.conflict", "g:team", {"device": "b1", "member": "bob"})
    assert ("events rule 4" in rules(m)) is found


@pytest.mark.parametrize(("answer", "found"), [("not-permitted", False), ("device-revoked", True)])
def test_events_rule_4_policy_readonly_only_after_a_not_permitted_refusal(answer, found):
    m = model()
    push = request("POST", "/graphs/g:team/push", {"ops": []})
    m.sent("t", push, 1.0)
    m.received("t", push, ok({"error": answer}, 403), 1.1, CLOCK)
    m.said("policy.readonly", "g:team", {"need": "write"})
    assert ("events rule 4" in rules(m)) is found


def test_events_rule_4_keys_unopenable_names_a_wrap_that_did_not_open():
    m = model()
    keyed(m)  # the epoch-1 wrap opens
    m.said("keys.unopenable", "g:team", {"epoch": 1})
    assert rules(m) == ["events rule 4"]


@pytest.mark.parametrize(("epoch", "found"), [(2, False), (1, True)])
def test_events_rule_4_keys_behind_only_behind_an_epoch_with_writes_held(epoch, found):
    m = model()
    keyed(m)
    mine = record("r0", T0, "alice")
    m.committed(Changes(held={(SK, "r0"): mine}, queued={(SK, "r0"): mine}), CLOCK)
    m.committed(Changes(relay_epochs={SK: epoch}), CLOCK)
    m.said("keys.behind", "g:team", {"held": 1, "holding": 1})
    assert ("events rule 4" in rules(m)) is found


def shows(m, linking="ok", behind=False, readonly=False, log="unverified") -> None:
    """A sync run of g:team ends, the device showing this status."""
    shown = {"log": {"state": log}, "behind": behind, "readonly": readonly}
    m.ran("g:team", None, None, "t", (linking, shown))


def test_linking_status_waiting_exactly_while_a_followed_graph_has_keys_and_it_holds_none():
    m = model()
    m.committed(Changes(followed={"g:team": True}, views=WHOLE, relay_epochs={SK: 1}), CLOCK)
    shows(m, linking="waiting", behind=True)
    assert rules(m) == []
    shows(m, linking="ok", behind=True)  # says linked with no key
    assert rules(m) == ["linking status"]
    keyed(m)
    shows(m, linking="waiting")  # says waiting holding the key
    assert rules(m) == ["linking status", "linking status"]


@pytest.mark.parametrize(("epoch", "behind", "found"), [
    (1, False, False), (2, True, False), (1, True, True), (2, False, True),
])  # fmt: skip
def test_events_rule_5_behind_shows_a_relay_epoch_above_the_newest_key_held(epoch, behind, found):
    m = model()
    m.committed(Changes(followed={"g:team": True}, views=WHOLE), CLOCK)
    keyed(m)
    m.committed(Changes(relay_epochs={SK: epoch}), CLOCK)
    shows(m, behind=behind)
    assert ("events rule 5" in rules(m)) is found


@pytest.mark.parametrize(("answers", "readonly", "found"), [
    ((403,), True, False), ((403, 200), False, False), ((403, 200), True, True),
    ((), True, True),
])  # fmt: skip
def test_events_rule_5_readonly_while_the_last_push_was_refused_not_permitted(
    answers, readonly, found
):
    m = model()
    m.committed(Changes(views=WHOLE), CLOCK)
    landed = {"accepted": 0, "rejected": [], "cursor": 0, "now": T0}
    for n, status in enumerate(answers):
        push = request("POST", "/graphs/g:team/push", {"ops": [], "n": n})
        body = {"error": "not-permitted"} if status == 403 else landed
        m.received(f"t{n}", push, ok(body, status), 1.1, CLOCK)
    shows(m, readonly=readonly)
    assert ("events rule 5" in rules(m)) is found


@pytest.mark.parametrize(("views", "log", "found"), [
    (WHOLE, "unverified", False), (WHOLE, "off", True),
    ({("g:team", ("task",), ()): True}, "off", False),
    ({("g:team", ("task",), ()): True}, "unverified", True),
])  # fmt: skip
def test_log_status_off_exactly_when_only_filtered_subscriptions_exist(views, log, found):
    m = model()
    m.committed(Changes(followed={"g:team": True}, views=views), CLOCK)
    shows(m, log=log)
    assert rules(m) == (["log status"] if found else [])


@pytest.mark.parametrize(("reason", "found"), [("wrong-author", False), ("bad-signature", True)])
def test_client_rule_2_the_reason_reported_is_a_fault_the_record_has(reason, found):
    m = model()
    keyed(m)
    rostered(m)
    rec = record("r1", T0, by="carol")  # b1 signs it properly but it claims carol wrote it
    pulled(m, [op(rec, 1)])
    m.committed(Changes(refused={(SK, "r1"): (T0, reason)}, cursors={("g:team", (), ()): 1}), CLOCK)
    assert ("client rule 2" in rules(m)) is found


def test_the_models_backoff_is_the_one_docs_client_md_states():
    """The model holds docs/client.md's numbers itself (it never reads the client's
    configuration): the text and the model's constants say the same."""
    from pathlib import Path

    from simkit.model.device import timing

    text = " ".join((Path(__file__).parents[2] / "docs" / "client.md").read_text().split())
    cap, base = f"{timing.BACKOFF_CAP_S:g} s", f"{timing.BACKOFF_BASE_S:g} s"
    assert f"{timing.ATTEMPTS} attempts" in text
    assert f"min({cap}, {base} * 2^(k-1)) * (0.5 + u/2)" in text
    assert timing.JITTER == (0.5, 1.0)


@pytest.mark.parametrize(
    ("before", "found"), [("approved", False), ("rejected", True), ("conflicted", True)]
)
def test_device_approval_pin_only_an_unknown_device_is_approved_by_possession(before, found):
    m = model("approve")
    m.committed(Changes(pins={"b1": Pin(before, "human", "fp")}), CLOCK)
    m.committed(Changes(pins={"b1": Pin("approved", "possession", "fp")}), CLOCK)
    assert ("pin states" in rules(m)) is found


LOG = request("GET", "/graphs/g:team/log", after=0, limit=500)
ANSWERS = {
    PULL.path: {"ops": [], "cursor": 0, "more": False},
    LOG.path: {"entries": [], "cursor": 0, "more": False, "head": 0, "oldest": 0},
}


def _exchange(m, at: float, status: int = 200, req=PULL) -> None:
    m.sent("t", req, at)
    answer = ANSWERS[req.path] if status == 200 else {"error": "unavailable"}
    m.received("t", req, ok(answer, status), at, CLOCK)


@pytest.mark.parametrize(
    ("gap", "cut", "status", "found"),
    [
        (10.0, False, 200, False),  # within two 5 s polls and a debounce
        (5000.0, False, 200, True),  # a poll interval read in milliseconds
        (30.0, False, 503, False),  # the longest backoff wait after a failure
        (40.0, False, 503, True),
        (1.0, True, 200, False),  # a run cut at its share runs again at once
        (5.0, True, 200, True),  # ... not at the next poll
    ],
)
def test_sync_cadence_a_running_device_is_never_quiet_longer_than_its_polls_allow(
    gap, cut, status, found
):
    """docs/client.md: an idle device syncs at least every poll interval, a busy one at most
    two apart; a run cut at its share runs again at once (judged under the spec's
    ``default: push debounce``, its only word on when a device acts)."""
    m = model()
    m.looping(0.0)
    _exchange(m, 1.0)
    m.ran("g:team", None, None)
    if cut:
        m.said("sync.stopped", "g:team", {"reason": "run-budget"})
    last = 1.0 if cut else 2.0  # the rest of a cut run goes on at once
    _exchange(m, last, status, LOG)
    m.ran("g:team", None, None)  # the cut run's part of g:team ends
    m.sent("t", PULL, last + gap)
    assert ("default: push debounce" in rules(m)) is found


def test_sync_cadence_judges_a_spell_still_going_at_the_end_and_none_before_the_first_run():
    m = model()
    m.looping(0.0)
    m.quiet_until(600.0)  # a device that follows no graph yet has nothing to sync
    assert rules(m) == []
    _exchange(m, 601.0)
    m.ran("g:team", None, None)
    m.quiet_until(700.0)
    assert rules(m) == ["default: push debounce"]
    m.crashed()
    m.quiet_until(900.0)  # a crashed device is not running
    assert rules(m) == ["default: push debounce"]


@pytest.mark.parametrize(("said", "trouble", "found"), [
    (True, None, False), (False, None, True), (False, 503, False), (False, "lost", False),
])  # fmt: skip
def test_events_rule_4_keys_behind_is_said_in_every_run_that_holds_writes_without_a_key(
    said, trouble, found
):
    """Completeness: writes queued and no key at the end of one run and of the next, the
    next without an error or a failed request, and it never said keys.behind in it."""
    m = model()
    mine = record("r0", T0, "alice")
    m.committed(Changes(held={(SK, "r0"): mine}, queued={(SK, "r0"): mine}), CLOCK)
    m.said("keys.behind", "g:team", {"held": 1, "holding": 0})
    m.ran("g:team", None, None, "t")
    if said:
        m.said("keys.behind", "g:team", {"held": 1, "holding": 0})
    if trouble == "lost":
        m.lost("t", PULL, 2.0)
    elif trouble is not None:
        m.received("t", PULL, ok({"error": "unavailable"}, trouble), 2.0, CLOCK)
    m.ran("g:team", None, None, "t")
    assert ("events rule 4" in rules(m)) is found


@pytest.mark.parametrize(("status", "last_error", "found"), [
    (403, "pull g:team: 403", False), (403, None, True), (403, "push u: 500", True),
    (404, None, True), (429, None, False),
])  # fmt: skip
def test_client_rule_10_other_4xx_are_surfaced_in_last_error_naming_the_graph(
    status, last_error, found
):
    m = model()
    m.received("t", PULL, ok({"error": "not-a-member"}, status), 1.0, CLOCK)
    m.ran("g:team", None, last_error, "t")
    assert ("client rule 10" in rules(m)) is found


def test_client_rule_10_a_log_route_an_older_relay_lacks_is_surfaced_by_the_log_status():
    m = model()
    m.received("t", LOG, ok({"error": "not-found"}, 404), 1.0, CLOCK)
    m.ran("g:team", None, None, "t")
    assert rules(m) == []


def test_client_rule_10_a_refused_write_is_not_judged_as_a_read_to_surface():
    m = model()
    post = request("POST", "/graphs/g:team/keys", {"epoch": 2, "wraps": []})
    m.received("t", post, ok({"error": "not-a-member-device"}, 400), 1.0, CLOCK)
    m.ran("g:team", None, None, "t")
    assert "client rule 10" not in rules(m)


def test_sync_cadence_a_cut_run_owes_one_run_at_once_not_every_one_after():
    m = model()
    m.looping(0.0)
    _exchange(m, 1.0)
    m.said("sync.stopped", "g:team", {"reason": "run-budget"})
    m.ran("g:team", None, None)  # the cut run ends
    _exchange(m, 1.0)  # another task's run had waited for the lock: it goes on at once
    m.ran("g:team", None, None)
    m.sent("t", PULL, 9.0)  # then the next poll, as any run
    assert rules(m) == []


@pytest.mark.parametrize(("cleared", "found"), [(True, False), (False, True)])
def test_events_rule_5_a_valid_version_applied_ends_the_records_refusal(cleared, found):
    """status.rejected names the records refused: a forged r1 refused, then a valid r1 at a
    later rev applied; the refusal must go with it."""
    m = model()
    keyed(m)
    rostered(m)
    forged = record("r1", T0, by="carol")  # b1 signs it, but it claims carol wrote it
    pulled(m, [op(forged, 1)])
    m.committed(Changes(refused={(SK, "r1"): (T0, "wrong-author")}), CLOCK)
    valid = record("r1", T0 + 5)
    pulled(m, [op(valid, 2)], after=1)
    refused = {(SK, "r1"): None} if cleared else {}
    m.committed(Changes(held={(SK, "r1"): valid}, refused=refused), CLOCK)
    assert ("events rule 5" in rules(m)) is found
