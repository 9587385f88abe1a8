"""Each promise the spec makes, stated as an invariant, fails on a stack that breaks it
and holds on the honest one. Worlds are fuzz step lists replayed exactly."""

from simkit.client import Device
from simkit.client.receive import check_op
from simkit.fuzz.driver import WorldDriver
from simkit.fuzz.params import WorldParams
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.fuzz.steps import apply_step
from simkit.invariants import Monitor
from simkit.invariants.convergence import Convergence
from simkit.relay import Relay
from simkit.sim.variant import HONEST, Variant
from simkit.sim.variants import load_variant

HERE = "tests.invariants.test_promises"


def run(steps, variant=None, machine="honest", **params):
    return replay(Reproducer(machine, WorldParams(5, **params), tuple(steps), variant=variant))


def broken(result, invariant: str) -> list[str]:
    return [str(v) for v in result.violations if v.invariant == invariant]


def only(invariant: str, steps, variant=None) -> list[str]:
    """What one invariant alone finds (others, such as relay-model, may stop a replay
    earlier for the same broken stack)."""
    return [str(v) for v in judged_alone(invariant, steps, variant)]


def judged_alone(invariant: str, steps, variant=None, seed: int = 5, **params) -> list:
    """The violations of ``invariant`` alone over ``steps`` in the world of ``seed``."""
    driver = WorldDriver(
        WorldParams(seed, **params).spec(), load_variant(variant) if variant else HONEST
    )
    monitor = Monitor(honest=True, only=(invariant,))
    try:
        found = list(monitor.step(driver.world))
        for index, step in enumerate(steps):
            apply_step(driver, step, index)
            found += monitor.step(driver.world)
        driver.run(driver.world.quiesce)
        found += monitor.final(driver.world)
    finally:
        driver.close()
    return found


class StaleKeys(Device):
    """Never rechecks keys once it holds some, and never holds its writes."""

    def due(self, graph_id, what):
        return what == "keys" and not self.keyring(graph_id).keys

    def behind(self, graph_id):
        return False


class AcceptsForgeries(Device):
    """Skips the signature and author checks of client rule 2."""

    def check(self, op, storage_key_, key, roster):
        return check_op(
            op, storage_key=storage_key_, graph_key=key, roster=roster,
            registry=self.config.registry, verify_signatures=False,
        )  # fmt: skip


class NeverDelivered(Relay):
    def _delivered(self, key, blob):
        return False


class DeliveredAtOnce(Relay):
    def _delivered(self, key, blob):
        return True


# it changes client rule 5 (writes are never held) and with it the status that says so
stale_keys = Variant("stale-keys", "a client that never learns of new epochs", device=StaleKeys,
                     changes=("client rule 5", "events rule 5"))  # fmt: skip
accepts_forgeries = Variant("accepts-forgeries", "no signature check", device=AcceptsForgeries)
never_delivered = Variant("never-delivered", "transport blobs kept", relay=NeverDelivered)
delivered_at_once = Variant("delivered-at-once", "transport blobs dropped", relay=DeliveredAtOnce)

REVOKED_BY_A_MEMBER_WITHOUT_ROTATE = [
    {"rule": "capability", "member": "bob", "may": "no-rotate"},
    {"rule": "revoke", "by": "b1", "device": "b2"},
    {"rule": "advance", "seconds": 120},
    {"rule": "advance", "seconds": 120},
    {"rule": "write", "device": "a1", "graph": "g:team", "record": "r1", "op": "edit"},
    {"rule": "advance", "seconds": 30},
]


def test_rotation_owed_fails_when_only_the_revoker_may_rotate_and_cannot():
    result = run(REVOKED_BY_A_MEMBER_WITHOUT_ROTATE, client={"rotate_after_s": None})
    assert broken(result, "rotation-owed")


def test_rotation_owed_holds_when_another_device_takes_its_turn():
    result = run(REVOKED_BY_A_MEMBER_WITHOUT_ROTATE)
    assert not result.violations, result.violations
    honoured = [e for e in result.world.trace if e.fields.get("name") == "rotation.honoured"]
    assert honoured and honoured[0].actor != "b1"


def test_post_revocation_confidentiality_fails_when_writers_keep_the_old_key():
    steps = [
        {"rule": "revoke", "by": "a2", "device": "a1"},
        {"rule": "advance", "seconds": 120},
        {"rule": "advance", "seconds": 120},
        {"rule": "write", "device": "b1", "graph": "g:team", "record": "r1", "op": "edit"},
        {"rule": "advance", "seconds": 5},
    ]
    assert broken(run(steps, f"{HERE}:stale_keys"), "post-revocation-confidentiality")
    assert not broken(run(steps), "post-revocation-confidentiality")


def test_forgery_fails_when_a_receiver_applies_a_forged_record():
    steps = [
        {"rule": "forge", "device": "b1", "graph": "g:team", "record": "r1", "how": "author"},
        {"rule": "advance", "seconds": 30},
    ]
    assert only("forgery", steps, f"{HERE}:accepts_forgeries")
    honest = run(steps)
    assert not honest.violations, honest.violations
    refusals = [e for e in honest.world.trace if e.fields.get("name") == "record.rejected"]
    assert {e.fields["reason"] for e in refusals} == {"wrong-author"}


def test_forgery_fails_when_a_forged_record_is_applied_even_if_overwritten_before_the_end():
    """The forged record is applied, then the honest author writes the record again:
    no device holds the forgery at quiescence, yet one applied it (before issue 36
    forgery judged only what was held at the end, and a change that let receivers
    accept any author passed a 60 s run)."""
    steps = [
        {"rule": "forge", "device": "b1", "graph": "g:team", "record": "r1", "how": "author"},
        {"rule": "advance", "seconds": 30},
        {"rule": "write", "device": "a1", "graph": "g:team", "record": "r1", "op": "edit"},
        {"rule": "advance", "seconds": 30},
    ]
    found = only("forgery", steps, f"{HERE}:accepts_forgeries")
    assert found and all("a forged record" in v and "applied r1 (seq 1)" in v for v in found)
    driver = WorldDriver(WorldParams(5).spec(), load_variant(f"{HERE}:accepts_forgeries"))
    try:
        for index, step in enumerate(steps):
            apply_step(driver, step, index)
        driver.run(driver.world.quiesce)
        slots = driver.world.slots.items()
        held = [d for d, slot in slots if "forged" in slot.device.records("g:team")["r1"]["data"]]
    finally:
        driver.close()
    assert held == [], "the forgery was overwritten: only judging each application sees it"
    assert not run(steps).violations


TRANSPORT_BLOB = [
    {
        "rule": "blob-upload", "device": "a1", "graph": "g:team", "blob": "a1-b0",
        "policy": "transport", "ttl": None,
    },
    {"rule": "blob-fetch", "device": "b1", "graph": "g:team", "blob": "a1-b0", "ack": True},
    {"rule": "blob-fetch", "device": "c1", "graph": "g:team", "blob": "a1-b0", "ack": True},
    {"rule": "advance", "seconds": 120},
    {"rule": "advance", "seconds": 120},
]  # fmt: skip


def test_blob_policies_fail_when_a_transport_blob_outlives_every_receipt():
    found = only("blob-policies", TRANSPORT_BLOB, f"{HERE}:never_delivered")
    assert any("still kept" in v for v in found)


def test_blob_policies_fail_when_a_transport_blob_goes_before_every_receipt():
    found = only("blob-policies", TRANSPORT_BLOB, f"{HERE}:delivered_at_once")
    assert any("before every receipt" in v for v in found)


def test_blob_policies_hold_for_the_honest_relay():
    result = run(TRANSPORT_BLOB)
    assert not result.violations, result.violations


def test_convergence_compares_content_not_only_revs():
    result = run([{"rule": "write", "device": "a1", "graph": "g:team", "record": "r1"}])
    assert not result.violations
    device = result.world.slots["b1"].device
    held = device.get("g:team", "r1")
    device.store.put("records:g:team", "r1", {**held, "data": {"other": "content"}})
    found = Convergence().final(result.world)
    assert found and "r1" in found[0].records and "content" in found[0].detail


def test_approval_gate_holds_when_an_unannounced_device_waits_for_approval():
    """A device linked without approval gets no wrap in approve mode (client rule 14).
    The stack that wraps it anyway is the source mutant approve-mode-wraps-pending,
    whose run tests/fuzz/test_mutants_caught.py replays to this invariant."""
    steps = [
        {"rule": "link", "member": "alice", "device": "a6", "announce": False},
        {"rule": "advance", "seconds": 120},
    ]
    result = run(steps, approval_mode="approve")
    assert not result.violations, result.violations
    assert "approval-gate" in {c.name for c in result.monitor.invariants}
    pending = [e for e in result.world.trace if e.fields.get("name") == "device.pending"]
    assert pending  # the gate did meet a6, and blocked it


def test_alarm_soundness_excuses_a_refusal_only_of_a_forged_op_the_device_was_handed():
    """A forged op is told from an honest write of the same record and rev (the same
    millisecond) by what a pull handed the device, not by the version alone."""
    from simkit.sim.ledger import Ledger

    ledger = Ledger()
    forged = {"recordId": "r0", "rev": 7, "seq": 3, "c": "forged-ciphertext"}
    ledger.forge("sk", forged, "not signed by its device")
    honest = {**forged, "c": "honest-ciphertext"}
    ledger.serve("b1", "sk", {"ops": [honest]}, 1)
    assert not ledger.handed_forgery("b1", "sk", "r0", 7)  # b1 holds the honest write
    ledger.serve("a1", "sk", {"ops": [forged]}, 2)
    assert ledger.handed_forgery("a1", "sk", "r0", 7)
    assert not ledger.handed_forgery("b1", "sk", "r0", 7)
    ledger.serve("a1", "sk", {"ops": [honest]}, 3)  # the honest op at those coordinates
    assert not ledger.handed_forgery("a1", "sk", "r0", 7)
