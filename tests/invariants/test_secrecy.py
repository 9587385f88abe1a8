"""secrecy: what leaves a device, judged against what its receiver may learn. Each
planted break (tests/invariants/secrecy_variants.py) is caught by name; the honest
stack holds on the same steps."""

import pytest

from simkit.fuzz.params import WorldParams
from simkit.fuzz.reproducer import Reproducer, replay

HERE = "tests.invariants.secrecy_variants"
INVITE = [{"rule": "invite", "by": "a1", "graph": "g:team", "member": "dave", "device": "d1"}]
RECOVER = [{"rule": "recover", "member": "alice", "device": "a9", "source": "a1"}]
LINK = [{"rule": "link", "member": "alice", "device": "a6"}]


def run(steps, variant=None):
    return replay(Reproducer("honest", WorldParams(3), tuple(steps), variant=variant))


@pytest.mark.parametrize(
    ("variant", "steps", "says"),
    [
        ("door_opens_the_box", INVITE, "the box of an invite opens with its door code alone"),
        ("bundle_without_passphrase", RECOVER, "a recovery bundle opens without its passphrase"),
        ("bundle_with_keypair", RECOVER, "a recovery bundle carries a1's wrapping private key"),
        ("registers_its_private_key", LINK, "the relay received a1's wrapping private key"),
    ],
)
def test_secrecy_catches_what_leaks_to_a_party_that_may_not_learn_it(variant, steps, says):
    found = [v for v in run(steps, f"{HERE}:{variant}").violations if v.invariant == "secrecy"]
    assert any(says in v.detail for v in found), found
    assert not run(steps).violations  # the honest stack, the same steps


def test_blindness_alone_does_not_see_a_private_key_the_relay_dropped():
    """The relay drops a member it does not know: its store never holds the key."""
    result = run(LINK, f"{HERE}:registers_its_private_key")
    assert not [v for v in result.violations if v.invariant == "blindness"]
