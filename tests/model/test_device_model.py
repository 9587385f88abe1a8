"""The device model (simkit.model.device) on hand-built inputs: each test feeds one
device's requests, answers and commits, made with the protocol's real constructions,
and checks that the model finds the slip it names (and nothing on the honest path).
Named after the rule each proves."""

import itertools
import json

import pytest

from simkit.model.device import App, Changes, DeviceModel, Identity, LogView, Pin
from simkit.protocol.derived import checkpoint_record_id
from simkit.protocol.entropy import SeededEntropy
from simkit.protocol.keys import DeviceKeys, device_fingerprint
from simkit.protocol.logchain import log_genesis, log_step
from simkit.protocol.records import seal_record, sign_record
from simkit.protocol.wrap import wrap_graph_key
from simkit.relay import Request, Response

SK = "g:team"
T0 = 1_700_000_000_000
CLOCK = itertools.repeat(T0).__next__  # the device's clock, read when a rule needs it
ENTROPY = SeededEntropy(7)
ME = DeviceKeys.generate(ENTROPY.fork("me"))
PEER = DeviceKeys.generate(ENTROPY.fork("peer"))
KEY1, KEY2 = b"\x01" * 32, b"\x02" * 32


def model(mode: str = "observe", changes=()) -> DeviceModel:
    identity = Identity("alice", "a1", ME.wrap_key, ME.sig_jwk)
    return DeviceModel(identity, App(lambda kind, data: True, approval_mode=mode), changes)


def request(method: str, path: str, body=None, **query) -> Request:
    raw = b"" if body is None else json.dumps(body).encode()
    return Request(method, path, query={k: str(v) for k, v in query.items()}, body=raw)


def ok(body: dict, status: int = 200) -> Response:
    return Response(status, {"content-type": "application/json"}, json.dumps(body).encode())


def roster_entry(device_id: str, member: str, keys: DeviceKeys, revoked_at=None) -> dict:
    return {
        "deviceId": device_id,
        "memberId": member,
        "pubJwk": keys.pub_jwk,
        "sigJwk": keys.sig_jwk,
        "selfSig": keys.self_sig(member),
        "revokedAt": revoked_at,
    }


def record(rid: str, at: int, by: str = "bob", **data) -> dict:
    return {"id": rid, "kind": "note", "data": data or {"t": rid}, "at": at, "by": by}


def op(rec: dict, seq: int, key: bytes = KEY1, signer=PEER, device="b1", epoch=1) -> dict:
    envelope = {"v": 1, "r": rec, "d": device, "s": sign_record(signer.sign_key, SK, rec)}
    n, c = seal_record(key, SK, envelope, entropy=ENTROPY.fork(f"op{seq}"))
    return {"recordId": rec["id"], "rev": rec["at"], "e": epoch, "n": n, "c": c, "seq": seq}


def keyed(m: DeviceModel, task="t", epochs=(1,)) -> None:
    """The device fetched keys (its wraps open) and adopted them."""
    wraps = [
        {"epoch": e, "wrapped": wrap_graph_key(k, ME.pub_jwk, entropy=ENTROPY.fork(str(e)))}
        for e, k in ((1, KEY1), (2, KEY2))
        if e in epochs
    ]
    latest = max(epochs)
    m.received(
        task,
        request("GET", "/graphs/g:team/keys"),
        ok({"latestEpoch": latest, "rotationRequired": False, "wraps": wraps}),
        1.0,
        CLOCK,
    )
    keys = {e: {1: KEY1, 2: KEY2}[e] for e in epochs}
    m.committed(Changes(keyrings={SK: keys}, relay_epochs={SK: latest}), CLOCK)


def rostered(m: DeviceModel, **revoked) -> None:
    entries = [
        roster_entry("a1", "alice", ME),
        roster_entry("b1", "bob", PEER, revoked.get("b1")),
    ]
    m.received("t", request("GET", "/graphs/g:team/devices"), ok({"devices": entries}), 1.0, CLOCK)


def pulled(m: DeviceModel, ops: list[dict], after: int = 0, epoch: int = 1) -> None:
    cursor = max([after, *(o["seq"] for o in ops)])
    answer = {"ops": ops, "cursor": cursor, "more": False, "epoch": epoch}
    m.received(
        "t", request("GET", "/graphs/g:team/pull", after=after, limit=500), ok(answer), 1.0, CLOCK
    )


def rules(m: DeviceModel) -> list[str]:
    return [f.rule for f in m.findings]


def test_client_rule_1_a_stamp_is_max_of_now_last_plus_one_and_prior_rev_plus_one():
    m = model()
    m.committed(Changes(held={(SK, "r0"): record("r0", T0, "alice")},
                        queued={(SK, "r0"): record("r0", T0, "alice")}), CLOCK)  # fmt: skip
    assert rules(m) == []
    stale = record("r0", T0, "alice", t="again")  # an edit stamped like the write it replaces
    m.committed(Changes(held={(SK, "r0"): stale}, queued={(SK, "r0"): stale}), CLOCK)
    assert rules(m) == ["client rule 1"]


@pytest.mark.parametrize(
    ("signer", "device", "revoked_at", "reason"),
    [
        (ME, "b1", None, "bad-signature"),
        (PEER, "b9", None, "unknown-device"),
        (PEER, "b1", T0 - 1, "revoked-device"),
    ],
)
def test_client_rule_2_a_record_that_fails_a_check_is_never_applied(
    signer, device, revoked_at, reason
):
    m = model()
    keyed(m)
    rostered(m, b1=revoked_at)
    rec = record("r1", T0)
    pulled(m, [op(rec, 1, signer=signer, device=device)])
    m.committed(Changes(held={(SK, "r1"): rec}, cursors={("g:team", (), ()): 1}), CLOCK)
    assert "client rule 2" in rules(m)
    assert reason in m.findings[0].detail


def test_client_rule_2_a_record_that_passes_every_check_is_applied_not_skipped():
    m = model()
    keyed(m)
    rostered(m)
    pulled(m, [op(record("r1", T0), 1)])
    m.committed(Changes(cursors={("g:team", (), ()): 1}), CLOCK)
    assert rules(m) == ["client rule 2"]
    good = model()
    keyed(good)
    rostered(good)
    rec = record("r1", T0)
    pulled(good, [op(rec, 1)])
    good.committed(Changes(held={(SK, "r1"): rec}, cursors={("g:team", (), ()): 1}), CLOCK)
    assert rules(good) == []


def test_client_rule_4_the_cursor_never_passes_an_op_under_a_missing_epoch():
    m = model()
    keyed(m)
    rostered(m)
    pulled(m, [op(record("r1", T0), 1, key=KEY2, epoch=2)], epoch=2)
    m.committed(Changes(cursors={("g:team", (), ()): 1}), CLOCK)
    assert rules(m) == ["client rule 4"]


def test_client_rule_5_a_device_behind_an_epoch_holds_its_writes():
    m = model()
    keyed(m)
    mine = record("r0", T0, "alice")
    m.committed(Changes(held={(SK, "r0"): mine}, queued={(SK, "r0"): mine}), CLOCK)
    pulled(m, [], epoch=2)  # an answer shows epoch 2; the device holds epoch 1
    m.committed(Changes(relay_epochs={SK: 2}), CLOCK)  # and keeps it at once
    envelope = {"v": 1, "r": mine, "d": "a1", "s": sign_record(ME.sign_key, SK, mine)}
    n, c = seal_record(KEY1, SK, envelope, entropy=ENTROPY.fork("mine"))
    push = {"ops": [{"recordId": "r0", "rev": T0, "e": 1, "n": n, "c": c}]}
    m.sent("t", request("POST", "/graphs/g:team/push", push), 2.0)
    assert rules(m) == ["client rule 5"]


def test_client_rule_8_echo_skipping_only_over_its_own_whole_batch():
    m = model()
    keyed(m)
    mine = record("r0", T0, "alice")
    m.committed(Changes(held={(SK, "r0"): mine}, queued={(SK, "r0"): mine}), CLOCK)
    envelope = {"v": 1, "r": mine, "d": "a1", "s": sign_record(ME.sign_key, SK, mine)}
    n, c = seal_record(KEY1, SK, envelope, entropy=ENTROPY.fork("mine"))
    push = request("POST", "/graphs/g:team/push", {"ops": [{"recordId": "r0", "rev": T0,
                   "e": 1, "n": n, "c": c}]})  # fmt: skip
    m.sent("t", push, 2.0)
    m.received("t", push, ok({"accepted": 1, "cursor": 3, "now": T0, "epoch": 1}), 2.1, CLOCK)
    m.committed(Changes(queued={(SK, "r0"): None}, cursors={("g:team", (), ()): 3}), CLOCK)
    assert rules(m) == ["client rule 8"]  # seqs 1 and 2 are somebody else's


def test_client_rule_10_a_request_that_got_429_is_retried_after_a_backoff():
    m = model()
    pull = request("GET", "/graphs/g:team/pull", after=0, limit=500)
    m.sent("t", pull, 1.0)
    m.received("t", pull, ok({"error": "rate-limited"}, 429), 1.1, CLOCK)
    m.sent("t", request("GET", "/graphs/g:team/keys"), 1.5)
    assert rules(m) == ["client rule 10"]
    again = model()
    again.sent("t", pull, 1.0)
    again.received("t", pull, ok({"error": "rate-limited"}, 429), 1.1, CLOCK)
    again.sent("t", pull, 1.6)
    assert rules(again) == []


def test_client_rule_12_only_a_wrap_that_fails_to_unwrap_is_discarded():
    m = model()
    keyed(m)
    m.sent("t", request("DELETE", "/graphs/g:team/keys/1"), 2.0)
    assert rules(m) == ["client rule 12"]


def test_client_rule_13_after_minting_the_device_adopts_what_the_relay_holds():
    m = model()
    body = {"epoch": 1, "wraps": [{"deviceId": "a1", "wrapped": "w"}], "excluding": []}
    m.sent("t", request("POST", "/graphs/g:team/keys", body), 1.0)
    m.committed(Changes(keyrings={SK: {1: KEY1}}), CLOCK)  # adopted without reading back
    assert rules(m) == ["client rule 13"]


def test_client_rule_14_approve_mode_wraps_only_approved_devices():
    m = model("approve")
    keyed(m)
    rostered(m)
    body = {
        "epoch": 2,
        "wraps": [{"deviceId": "a1", "wrapped": "w"}, {"deviceId": "b1", "wrapped": "w"}],
        "excluding": [],
    }
    m.sent("t", request("POST", "/graphs/g:team/keys", body), 1.0)
    assert rules(m) == ["client rule 14"]
    approved = model("approve")
    keyed(approved)
    rostered(approved)
    fp = device_fingerprint("bob", PEER.pub_jwk, PEER.sig_jwk)
    approved.committed(Changes(pins={"b1": Pin("approved", "human", fp)}), CLOCK)
    approved.sent("t", request("POST", "/graphs/g:team/keys", body), 1.0)
    assert rules(approved) == []


def test_client_rule_14_a_grant_of_an_epoch_only_keygaps_showed_is_no_new_epoch():
    """o1: a device that last read keys at epoch 1 imports epoch 2's key, reads key gaps
    (latestEpoch 2, itself lacking it) and fills its own gap. That post is a grant,
    judged against the key gaps it read, not a rotation owing the whole roster."""
    m = model("approve")
    keyed(m)  # GET keys said latestEpoch 1
    rostered(m)  # a1 and b1, both active
    me = {k: v for k, v in roster_entry("a1", "alice", ME).items() if k != "revokedAt"}
    gaps = {"latestEpoch": 2, "gaps": [{**me, "epochs": [2]}]}
    m.received("t", request("GET", "/graphs/g:team/keygaps"), ok(gaps), 1.0, CLOCK)
    body = {"epoch": 2, "wraps": [{"deviceId": "a1", "wrapped": "w"}], "excluding": []}
    m.sent("t", request("POST", "/graphs/g:team/keys", body), 2.0)
    assert rules(m) == []
    m.sent("t", request("POST", "/graphs/g:team/keys", {**body, "epoch": 3}), 3.0)
    assert rules(m) == ["client rule 14"]  # a new epoch still owes b1 a wrap or a name


def test_client_rule_14_observe_mode_wraps_the_key_anyway():
    m = model("observe")
    keyed(m)
    rostered(m)
    body = {"epoch": 2, "wraps": [{"deviceId": "a1", "wrapped": "w"}], "excluding": ["b1"]}
    m.sent("t", request("POST", "/graphs/g:team/keys", body), 1.0)
    assert rules(m) == ["client rule 14"]


def test_log_chain_a_head_at_a_boundary_folds_every_entry_up_to_it():
    m = model()
    entries = [{"seq": s, "recordId": f"r{s}", "rev": T0 + s} for s in range(1, 66)]
    m.received(
        "t",
        request("GET", "/graphs/g:team/log", after=0, limit=500),
        ok({"entries": entries, "cursor": 65, "more": False, "head": 65, "oldest": 1}),
        1.0,
        CLOCK,
    )
    head = log_genesis(SK)
    for e in entries[:64]:
        head = log_step(head, e["seq"], e["recordId"], e["rev"])
    m.committed(Changes(logs={SK: LogView("unverified", None, {64: head})}), CLOCK)
    assert rules(m) == []
    m.committed(Changes(logs={SK: LogView("unverified", None, {64: "x" * 43})}), CLOCK)
    assert rules(m) == ["log chain"]


def _pruned_read(m, oldest: int, after: int = 0) -> None:
    entries = [{"seq": s, "recordId": f"r{s}", "rev": T0 + s} for s in range(oldest, oldest + 3)]
    page = {"entries": entries, "cursor": oldest + 2, "more": False, "head": oldest + 2,
            "oldest": oldest}  # fmt: skip
    m.received("t", request("GET", "/graphs/g:team/log", after=after, limit=500), ok(page),
               1.0, CLOCK)  # fmt: skip


def test_log_status_a_log_read_pruned_past_the_device_anchors_it_where_the_kept_log_starts():
    """Log verification status: 'ok -> unverified: log pruned past the device'."""
    m = model()
    _pruned_read(m, oldest=5)
    m.committed(Changes(logs={SK: LogView("unverified", 4, {})}), CLOCK)
    assert rules(m) == []
    kept = model()
    _pruned_read(kept, oldest=5)
    kept.committed(Changes(logs={SK: LogView("ok", None, {})}), CLOCK)
    assert rules(kept) == ["log status"]  # kept its chain from genesis over a pruned gap
    elsewhere = model()
    elsewhere.committed(Changes(logs={SK: LogView("unverified", None, {})}), CLOCK)
    _pruned_read(elsewhere, oldest=5)
    elsewhere.committed(Changes(logs={SK: LogView("unverified", 3, {})}), CLOCK)
    assert rules(elsewhere) == ["log status"]  # anchored where no read found it pruned


def test_log_status_a_fresh_chain_starts_at_genesis_or_anchored_at_most_at_the_seq_served():
    m = model()
    m.committed(Changes(logs={SK: LogView("unverified", 1, {})}), CLOCK)
    assert rules(m) == ["log status"]  # nothing was served to it: genesis


def test_log_status_alarm_needs_a_contradiction_and_is_latched():
    m = model()
    m.committed(Changes(logs={SK: LogView("alarm")}), CLOCK)
    assert rules(m) == ["log status"]
    m.committed(Changes(logs={SK: LogView("unverified")}), CLOCK)
    assert rules(m) == ["log status"] * 2


@pytest.mark.parametrize(
    ("steps", "found"),
    [
        (("b1", "forgery"), []),  # b1 signed a head that differs: the forgery takes nothing back
        (("forgery",), ["log status"]),  # nothing b1 signed: nothing to believe
        (("b1", "import", "forgery"), ["log status"]),  # believed, then wiped
    ],
)
def test_log_status_a_peer_checkpoint_founds_an_alarm_after_its_slot_is_written_over(steps, found):
    """Log check (2) compares with what other devices signed for a boundary: b1's
    checkpoint, once served, stays a cause when another member's write (one the device
    cannot believe: alice does not own b1) takes its slot (o3, docs/findings.md F28);
    an import drops what the device believed before it."""
    m = model()
    keyed(m)
    forger = DeviceKeys.generate(ENTROPY.fork("forger"))  # alice's other device, a2
    entries = [roster_entry("a1", "alice", ME), roster_entry("a2", "alice", forger),
               roster_entry("b1", "bob", PEER)]  # fmt: skip
    m.received("t", request("GET", "/graphs/g:team/devices"), ok({"devices": entries}), 1.0, CLOCK)
    log = [{"seq": s, "recordId": f"r{s}", "rev": T0 + s} for s in range(1, 65)]
    ours = log_genesis(SK)
    for e in log:
        ours = log_step(ours, e["seq"], e["recordId"], e["rev"])
    slot = checkpoint_record_id(KEY1, "b1")
    signed = {"id": slot, "kind": "skm.checkpoint", "at": T0 + 65, "by": "bob",
              "data": {"v": 1, "d": "b1", "seq": 64, "head": "A" * 43}}  # fmt: skip
    forged = {**signed, "at": T0 + 66, "by": "alice", "data": {**signed["data"], "head": "B" * 43}}
    log += [{"seq": s, "recordId": slot, "rev": T0 + s} for s in (65, 66)]  # its two versions
    page = {"entries": log, "cursor": 66, "more": False, "head": 66, "oldest": 1}
    m.received("t", request("GET", "/graphs/g:team/log", after=0, limit=500), ok(page), 1.0, CLOCK)
    for step in steps:
        if step == "b1":
            pulled(m, [op(signed, 65)], after=64)
            m.committed(Changes(held={(SK, slot): signed}), CLOCK)
        elif step == "forgery":
            pulled(m, [op(forged, 66, signer=forger, device="a2")], after=65)
            m.committed(Changes(held={(SK, slot): forged}), CLOCK)
        else:  # a recovery bundle: the record store and the log state are wiped
            m.importing({SK: {1: KEY1}}, wipe=True)
            m.committed(Changes(held={(SK, slot): None}, logs={SK: None}), CLOCK)
            m.imported()
    assert rules(m) == []
    m.committed(Changes(logs={SK: LogView("alarm", None, {64: ours})}), CLOCK)
    assert rules(m) == found


def test_a_variant_that_changes_a_rule_leaves_it_to_the_other_invariants():
    m = model(changes=("client rule 12",))
    keyed(m)
    m.sent("t", request("DELETE", "/graphs/g:team/keys/1"), 2.0)
    assert rules(m) == [] and m.departures == {"client rule 12": 1}


def test_client_rule_4_an_op_under_a_missing_epoch_makes_it_fetch_keys_before_pulling_again():
    m = model()
    keyed(m)  # epoch 1 only
    m.committed(Changes(relay_epochs={SK: 2}), CLOCK)
    pulled(m, [op(record("r0", T0), 1, key=KEY2, epoch=2)], epoch=2)
    m.sent("t", request("GET", "/graphs/g:team/pull", after=0, limit=500), 1.5)
    assert rules(m) == ["client rule 4"]
    fetched = model()
    keyed(fetched)
    fetched.committed(Changes(relay_epochs={SK: 2}), CLOCK)
    pulled(fetched, [op(record("r0", T0), 1, key=KEY2, epoch=2)], epoch=2)
    fetched.sent("t", request("GET", "/graphs/g:team/keys"), 1.5)
    fetched.sent("t", request("GET", "/graphs/g:team/pull", after=0, limit=500), 1.6)
    assert rules(fetched) == []


def test_client_rule_4_a_key_another_task_was_served_is_not_lacking():
    """A rotation's task read keys (its wrap of epoch 2 opens) while the sync task's pull
    was in flight: the pull answer's op under epoch 2 is one the device can open before
    it commits the key, so its next pull owes no keys read (F31)."""
    m = model()
    keyed(m)  # epoch 1 only
    wrap = wrap_graph_key(KEY2, ME.pub_jwk, entropy=ENTROPY.fork("2"))
    served = {"latestEpoch": 2, "rotationRequired": False, "wraps": [{"epoch": 2, "wrapped": wrap}]}
    m.received("rotation", request("GET", "/graphs/g:team/keys"), ok(served), 1.2, CLOCK)
    pulled(m, [op(record("r0", T0), 1, key=KEY2, epoch=2)], epoch=2)
    m.sent("t", request("GET", "/graphs/g:team/pull", after=1, limit=500), 1.5)
    assert rules(m) == []
    in_flight = model()  # the rotation's keys read was sent before the pull was answered
    keyed(in_flight)
    in_flight.sent("rotation", request("GET", "/graphs/g:team/keys"), 1.1)
    pulled(in_flight, [op(record("r0", T0), 1, key=KEY2, epoch=2)], epoch=2)
    in_flight.received("rotation", request("GET", "/graphs/g:team/keys"), ok(served), 1.3, CLOCK)
    in_flight.sent("t", request("GET", "/graphs/g:team/pull", after=1, limit=500), 1.5)
    assert rules(in_flight) == []


def test_log_status_ok_goes_back_to_unverified_when_the_relay_cannot_be_reached():
    m = model()
    m.committed(Changes(logs={SK: LogView("ok", None, {})}), CLOCK)
    keys = request("GET", "/graphs/g:team/keys")
    m.sent("t", keys, 1.0)
    m.lost("t", keys, 11.0)
    m.sent("t", keys, 11.4)  # the retry, after its backoff
    m.lost("t", keys, 22.0)  # given up: the run moves on, the status still ok
    m.sent("t", request("GET", "/graphs/u/keys"), 23.0)
    assert rules(m) == ["log status"]


def test_a_commit_that_changed_any_noun_is_a_change_and_one_that_changed_none_is_not():
    """``Changes`` is falsy only when every part is empty (a commit that changed nothing
    ends at once): each part on its own makes it a change."""
    import attrs

    from simkit.model.device.views import Changes

    assert not Changes()
    for field in attrs.fields(Changes):
        assert Changes(**{field.name: {"x": None}}), field.name


def _my_push(mine: dict) -> Request:
    envelope = {"v": 1, "r": mine, "d": "a1", "s": sign_record(ME.sign_key, SK, mine)}
    n, c = seal_record(KEY1, SK, envelope, entropy=ENTROPY.fork(f"mine{mine['at']}"))
    body = {"ops": [{"recordId": mine["id"], "rev": mine["at"], "e": 1, "n": n, "c": c}]}
    return request("POST", "/graphs/g:team/push", body)


def _pushed_and_accepted() -> tuple[DeviceModel, dict]:
    """A device with a queued write it pushed and received the answer accepting it."""
    m = model()
    keyed(m)
    mine = record("r0", T0, "alice")
    m.committed(Changes(held={(SK, "r0"): mine}, queued={(SK, "r0"): mine}), CLOCK)
    push = _my_push(mine)
    m.sent("t", push, 2.0)
    m.received("t", push, ok({"accepted": 1, "cursor": 1, "now": T0, "epoch": 1}), 2.1, CLOCK)
    return m, mine


@pytest.mark.parametrize("dequeued", [True, False])
def test_the_queue_a_write_the_relay_accepted_leaves_it_and_is_not_pushed_again(dequeued):
    m, mine = _pushed_and_accepted()
    m.committed(Changes(queued={(SK, "r0"): None} if dequeued else {}), CLOCK)
    m.sent("t", _my_push(mine), 3.0)  # the next sync run (a new seal of the same write)
    assert rules(m) == ([] if dequeued else ["queued writes"])
    assert dequeued or "again after an answer it committed accepted it" in m.findings[0].detail


def test_the_queue_a_push_answer_lost_to_a_crash_leaves_the_write_to_push_again():
    m, mine = _pushed_and_accepted()
    m.crashed()  # before it committed the answer
    m.restarted()
    m.sent("t", _my_push(mine), 3.0)
    assert rules(m) == []


@pytest.mark.parametrize(
    ("after", "found"), [(3, []), (5, []), (0, ["pull: cursor per subscription"])]
)
def test_pull_rules_a_device_pulls_a_subscription_from_the_cursor_it_persisted(after, found):
    m = model()
    keyed(m)
    pulled(m, [], after=3)  # the relay's answer takes the view to seq 3
    m.committed(Changes(cursors={("g:team", (), ()): 3}), CLOCK)
    m.sent("t", request("GET", "/graphs/g:team/pull", after=after, limit=500), 2.0)
    assert rules(m) == found
    filtered = request("GET", "/graphs/g:team/pull", after=0, limit=500, kinds="note")
    m.sent("t", filtered, 2.5)  # another subscription, at its own place
    assert rules(m) == found


@pytest.mark.parametrize(
    ("error", "last_error", "found"),
    [
        (None, None, False),  # no error yet, nothing to say
        ("unreachable", "pull g:team: the relay could not be reached", False),
        (None, "an earlier error", False),  # the field keeps the last error
        ("unreachable", None, True),  # the run failed and the status does not say so
        ("stalled", "", True),
        ("unreachable", ConnectionError("lost"), True),  # an object, not a text
    ],
)
def test_client_status_last_error_says_why_a_sync_run_ended_in_an_error(error, last_error, found):
    m = model()
    m.ran("g:team", error, last_error)
    assert bool(m.findings) is found
    assert all(f.rule == "events rule 5" for f in m.findings)


@pytest.mark.parametrize(("device", "state", "found"), [
    ("b1", "approved", False), ("b1", "rejected", False), ("approved", "b1", True),
    ("b1", "pending", True),
])  # fmt: skip
def test_device_approval_pin_a_pin_is_approved_rejected_or_conflicted(device, state, found):
    m = model("approve")
    m.committed(Changes(pins={device: Pin(state, "human", None)}), CLOCK)
    assert rules(m) == (["pin states"] if found else [])


@pytest.mark.parametrize(("asks", "found"), [(True, False), (False, True)])
def test_client_rule_5_a_higher_epoch_makes_it_fetch_keys_before_its_next_write(asks, found):
    m = model()
    keyed(m)  # epoch 1 only
    mine = record("r0", T0, "alice")
    m.committed(Changes(held={(SK, "r0"): mine}, queued={(SK, "r0"): mine}), CLOCK)
    pulled(m, [], epoch=2)
    m.committed(Changes(relay_epochs={SK: 2}), CLOCK)
    m.ran("g:team", None, None)  # a run ends behind epoch 2, the write held
    if asks:
        m.sent("t", request("GET", "/graphs/g:team/keys"), 2.0)  # no newer wrap for it yet
    m.sent("t", request("GET", "/graphs/g:team/pull", after=0, limit=500), 2.1)
    m.ran("g:team", None, None)  # the next run
    assert rules(m) == (["client rule 5"] if found else [])


@pytest.mark.parametrize(("dequeued", "found"), [(True, []), (False, ["queued writes"])])
def test_the_queue_a_queued_write_is_the_version_held(dequeued, found):
    m = model()
    keyed(m)
    rostered(m)
    mine = record("r0", T0, "alice")
    m.committed(Changes(held={(SK, "r0"): mine}, queued={(SK, "r0"): mine}), CLOCK)
    theirs = record("r0", T0 + 20)
    pulled(m, [op(theirs, 1)])  # a newer copy wins (client rule 3)
    queue = {(SK, "r0"): None} if dequeued else {}
    m.committed(
        Changes(held={(SK, "r0"): theirs}, queued=queue, cursors={("g:team", (), ()): 1}), CLOCK
    )
    assert rules(m) == found


@pytest.mark.parametrize(("age_s", "found"), [(10, []), (60, ["client rule 6"])])
def test_client_rule_2_a_roster_read_more_than_recheck_s_before_an_op_cannot_vouch_for_it(
    age_s, found
):
    """docs/client.md, "The roster cache": a roster is kept for ``recheck_s`` (30 s); an
    op that comes later is judged under a roster read again (F12), or waits (rule 6)."""
    m = model()
    keyed(m)
    rostered(m)  # read at T0 by the device's clock
    rec = record("r1", T0)
    answer = {"ops": [op(rec, 1)], "cursor": 1, "more": False, "epoch": 1}
    later = itertools.repeat(T0 + age_s * 1000).__next__
    m.received("t", request("GET", "/graphs/g:team/pull", after=0), ok(answer), 2.0, later)
    m.committed(Changes(held={(SK, "r1"): rec}, cursors={("g:team", (), ()): 1}), later)
    assert rules(m) == found


@pytest.mark.parametrize(("head", "found"), [(0, []), (1, ["log status"])])
def test_log_status_a_log_head_below_an_op_served_is_a_contradiction(head, found):
    """F41 (docs/findings.md): "`head` is the highest seq in the log" and the relay logs
    every write it stores, so a log page whose head is below an op a pull served (a
    relay rolled back) founds the alarm."""
    m = model()
    keyed(m)
    rostered(m)
    pulled(m, [op(record("r1", T0), 1)])
    page = {"entries": [], "cursor": head, "more": False, "head": head, "oldest": head}
    m.received("t", request("GET", "/graphs/g:team/log", after=0), ok(page), 2.0, CLOCK)
    m.committed(Changes(logs={SK: LogView("alarm")}), CLOCK)
    assert [r for r in rules(m) if r == "log status"] == found
