"""The mutants' check queue (``tests.fuzz.mutants.check_table``): one line per mutant,
a kill's reproducer kept, and a second run resumes where the first stopped."""

import json

from simkit.fuzz.reproducer import Reproducer, replay
from tests.fuzz.mutants import check_table

KILLED_AT_DEPTH_1 = "push-first-seq-reuses-counter"  # docs/checking.md: 0.2 s, convergence


def test_a_kill_keeps_its_reproducer_and_a_second_run_resumes(tmp_path):
    out = tmp_path / "d1.jsonl"
    check_table.main(1, out, KILLED_AT_DEPTH_1)
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["killed"] and row["depth"] == 1 and row["error"] is None
    kept = tmp_path / f"d1.{KILLED_AT_DEPTH_1}.json"
    assert row["reproducer"] == str(kept)
    repro = Reproducer.load(kept)
    assert len(repro.steps) == 1
    assert not replay(repro).violations  # the honest code holds where the mutant broke
    check_table.main(1, out, KILLED_AT_DEPTH_1)  # done already: not run again
    assert len(out.read_text().splitlines()) == 1
