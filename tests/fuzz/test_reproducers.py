"""Regression corpus: every reproducer the fuzzer found (and that was fixed) replays
without a violation. Each file's ``found`` says what it was."""

from pathlib import Path

import pytest

from simkit.fuzz.reproducer import Reproducer, replay

CORPUS = sorted(Path(__file__).with_name("reproducers").glob("*.json"))


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_fixed_fuzz_finding_stays_fixed(path):
    result = replay(Reproducer.load(path))
    assert not result.violations, "\n".join(str(v) for v in result.violations)
