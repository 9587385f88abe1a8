"""The invariants no other test made fire (issue 39, item 9), each shown catching a
planted break by name (tests/invariants/planted_variants.py), while the honest stack
holds on the same steps: a regression that silenced one fails here."""

import attrs
import pytest

from simkit.fuzz.params import WorldParams
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.invariants.blindness import Blindness
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
