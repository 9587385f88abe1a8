"""Each deliberately broken variant is caught by the fuzzer, and its reproducer
replays to the same violation and trace hash twice."""

import pytest

from simkit.fuzz.reproducer import replay
from simkit.fuzz.runner import fuzz
from tests.fuzz.variants import ALL


@pytest.mark.parametrize("variant", ALL, ids=[v.name for v in ALL])
def test_broken_variant_is_caught_and_its_reproducer_replays_exactly(variant):
    ref = f"tests.fuzz.variants:{variant.name.replace('-', '_')}"
    # skip-revoked needs a stolen device to write after its revocation: up to ~130
    # examples (about a second each with the invariants checked after every step)
    result = fuzz(variant, seconds=300, seed=0, max_steps=20, variant_ref=ref, shrink=False)
    assert result.failure is not None, f"{variant.name} was not caught in {result.seconds:.0f} s"
    first, second = replay(result.reproducer), replay(result.reproducer)
    assert first.violations and first.trace_hash == second.trace_hash
    assert first.failed_at == second.failed_at
