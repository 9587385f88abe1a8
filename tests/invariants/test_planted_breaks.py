"""The invariants no other test made fire (issue 39, item 9), each shown catching a
planted break by name (tests/invariants/planted_variants.py), while the honest stack
holds on the same steps: a regression that silenced one fails here."""

import attrs
import pytest

from simkit.fuzz.params import WorldParams
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.invariants.approval import ApprovalGate, _self_sig_verifies
from simkit.invariants.blindness import Blindness
from simkit.protocol.messages import BOX_MALFORMATIONS, INVITE_MALFORMATIONS
from simkit.scenario.load import library_path, load_scenario
from simkit.scenario.run import run_scenario
from simkit.sim.trace import TraceEvent
from simkit.sim.variants import load_variant
from simkit.sim.workload import PLAINTEXT_MARK
from tests.invariants.test_promises import judged_alone

HERE = "tests.invariants.planted_variants"
WRITES = [
    {"rule": "write", "device": "a1", "graph": "g:team", "record": "r0", "op": "edit"},
    {"rule": "advance", "seconds": 60},
]
WITHHELD = [
    {"rule": "adversary", "mode": "withhold", "targets": ["b1"], "params": {"log": "lists"}},
    *[{"rule": "write", "device": "a1", "graph": "g:team", "record": r, "op": "edit"}
      for r in ("r0", "r1", "r2")],
    {"rule": "advance", "seconds": 120},
]  # fmt: skip


def run(machine, steps, variant=None, **params):
    return replay(Reproducer(machine, WorldParams(3, **params), tuple(steps), variant=variant))


@pytest.mark.parametrize(
    ("invariant", "machine", "steps", "variant", "says"),
    [
        ("work", "honest", WRITES, "asks_forty_one", "requests"),
        ("alarm-completeness", "adversary", WITHHELD, "silent_alarm", "alarmed never"),
    ],
)
def test_the_invariant_catches_its_planted_break_by_name(invariant, machine, steps, variant, says):
    found = run(machine, steps, f"{HERE}:{variant}").violations
    assert any(v.invariant == invariant and says in v.detail for v in found), found
    assert not run(machine, steps).violations  # the honest stack, the same steps


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("label", "record plaintext"),
        ("selfSig", "a1's wrapping private key"),
    ],
)
def test_blindness_catches_a_secret_planted_in_the_relays_state(where, says):
    """No conforming client sends the relay a secret (``secrecy`` judges every request
    first), so blindness, the backstop over the stored state, is shown a planted one:
    a record's plaintext in a device's label, a private key in its selfSig."""
    world = run("honest", WRITES).world
    assert not Blindness().final(world)
    row = world.relay.state.devices["a1"]
    if where == "label":
        row = attrs.evolve(row, label=PLAINTEXT_MARK)
    else:
        row = attrs.evolve(row, self_sig=world.slots["a1"].device.keys.to_json()["wrap"]["d"])
    world.relay.state.devices["a1"] = row
    found = Blindness().final(world)
    assert [(v.invariant, v.detail) for v in found] == [
        ("blindness", f"the relay's state contains {says}")
    ]


@pytest.mark.parametrize(
    ("invariant", "steps", "variant", "params"),
    [
        ("alarm-soundness", WRITES, "spurious_alarm", {}),
        ("no-lost-write", WRITES, "drops_its_queue", {}),
        ("convergence", WRITES, "seals_another_text", {}),
    ],
)
def test_the_invariant_alone_catches_its_planted_break(invariant, steps, variant, params):
    """Invariants a broken client trips alongside others (device-model first, often):
    each judged alone, so that a regression silencing it fails here, in both CI steps."""
    found = judged_alone(invariant, steps, f"{HERE}:{variant}", seed=3, **params)
    assert found and {v.invariant for v in found} == {invariant}, found
    assert not judged_alone(invariant, steps, seed=3, **params)  # the honest stack, the same steps


def test_approval_gate_catches_a_client_that_approves_on_its_own():
    """``approval-gate`` judges approvals from what the world knows (a human's Approve,
    a record the device applied from the other, its selfSig), never from the device's
    pins or its own ``device.approved`` events: a client that approves every device it
    sees, and says a human did, is caught wrapping to the new device before the human
    on a1 approved it (scenario run: the same in both CI steps)."""
    scenario = load_scenario(library_path() / "link-by-pairing-code.toml")
    honest = run_scenario(scenario)
    assert honest.passed
    planted = run_scenario(
        attrs.evolve(scenario, variant=load_variant(f"{HERE}:approves_on_sight"))
    )
    gate = next(i for i in planted.invariants if i.name == "approval-gate")
    assert gate.violations and "a3 (no human approved it on" in gate.violations[0], gate


def test_approval_by_possession_is_judged_from_what_the_poster_was_served_not_its_events():
    """Possession is a record version the other device wrote that a pull answer handed the
    poster (the ledger, read off its link) before the wrap: a ``record.applied`` event the
    poster emits proves nothing (a client's events are what is judged, not a judge)."""
    world = run_scenario(load_scenario(library_path() / "link-by-pairing-code.toml")).world
    world.config = attrs.evolve(world.config, approval_mode="approve")
    sk, rev = "g:team", 1_767_225_600_123

    def event(at, actor, name, **fields):
        return TraceEvent(at, 0, "event", actor, None, {"name": name, **fields})

    wrote = event(1, "a3", "app.write", graph="g:team", recordId="p1", rev=rev)
    says = event(2, "a1", "record.applied", graph="g:team", recordId="p1", rev=rev, seq=9)
    grant = event(5, "relay", "keys.grant", graph=sk, epoch=1, device_id="a1", devices=["a3"])
    world.ledger.approvals.discard(("a1", "a3"))
    world.ledger.served.clear()
    gate = ApprovalGate()
    for e in (wrote, says):  # as the monitor hands them: only the events the gate observes
        if e.fields["name"] in gate.observes:
            gate.observe(world, e)
    [found] = gate.observe(world, grant)  # the event alone: no possession
    assert "a1 was served no record it wrote" in found.detail
    world.ledger.served.append(("a1", sk, "p1", rev, 6))  # served only after the wrap:
    assert gate.observe(world, grant)  # no proof then
    world.ledger.served.append(("a1", sk, "p1", rev, 3))  # a pull answer before it
    assert not gate.observe(world, grant)


def test_approval_by_possession_needs_a_self_sig_that_verifies():
    """The gate's possession proof holds only for a device whose registration carries a
    selfSig that verifies (a device of the previous release has none)."""
    scenario = load_scenario(library_path() / "release-device-without-self-sig.toml")
    world = run_scenario(scenario).world
    without = [d for d, e in world.relay.state.devices.items() if e.self_sig is None]
    assert without and not any(_self_sig_verifies(world, d) for d in without)
    assert _self_sig_verifies(world, "a1")
    entry = world.relay.state.devices["a1"]
    world.relay.state.devices["a1"] = attrs.evolve(entry, self_sig=entry.self_sig[::-1])
    assert not _self_sig_verifies(world, "a1")


RECOVER = [
    {"rule": "advance", "seconds": 20},
    {"rule": "recover", "member": "alice", "device": "a9", "source": "a1",
     "malformed": "SealedBox.v out-of-range"},
    {"rule": "advance", "seconds": 60},
]  # fmt: skip


def test_a_recovery_bundle_of_another_version_is_refused_and_adopting_it_is_caught():
    """Hostile messages (issue 38): a bundle broken one way of the spec's table
    (``SEALED_BOX``: here ``v: 2``) is refused by the honest device, which adopts
    nothing from it (it registers without keys and waits for them, as a linked device
    does); a device that reads any bundle as version 1 adopts its
    keys, which the device model finds (client rule 13: keys come from a wrap served, a
    bundle or an invite it could open)."""
    honest = run("honest", RECOVER)
    assert not honest.violations
    names = [(e.actor, e.fields.get("name")) for e in honest.world.trace]
    assert ("a9", "app.import-refused") in names
    found = run("honest", RECOVER, f"{HERE}:any_bundle_version").violations
    assert any(v.invariant == "device-model" and "a9 adopted a key" in v.detail for v in found)


def _invited(malformed: str) -> list[dict]:
    return [
        {"rule": "advance", "seconds": 20},
        {"rule": "invite", "by": "a1", "graph": "g:team", "member": "dave", "device": "d1",
         "malformed": malformed},
        {"rule": "advance", "seconds": 60},
    ]  # fmt: skip


@pytest.mark.parametrize(
    "malformed", [*INVITE_MALFORMATIONS, *(n for n, m in BOX_MALFORMATIONS.items() if not m.valid)]
)
def test_an_invite_broken_one_way_of_the_spec_is_refused_and_nothing_adopted(malformed):
    """Hostile messages (issue 38): an invite string (``<doorCode>.<keySecret>``) or the
    box the host hands back (``SEALED_BOX``) broken one way is refused by the honest
    device, which adopts nothing from it and waits for a grant as a new member."""
    honest = run("honest", _invited(malformed))
    assert not honest.violations, honest.violations
    names = [(e.actor, e.fields.get("name")) for e in honest.world.trace]
    assert ("d1", "app.invite-refused") in names
    assert f"malformed invite {malformed}" in honest.world.coverage.counts


def test_an_invite_box_of_another_version_opened_anyway_is_caught():
    """The planted break: a device that reads an invite box of any ``v`` as version 1
    adopts its keys, which the device model finds (keys come from a wrap served, a bundle
    or an invite it could open)."""
    found = run("honest", _invited("SealedBox.v out-of-range"), f"{HERE}:any_invite_box_version")
    assert any(
        v.invariant == "device-model" and "d1 adopted a key" in v.detail for v in found.violations
    )
