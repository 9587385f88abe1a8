"""What a check can find in a mutant is bounded by which of its lines the honest check
runs (``tests.fuzz.mutants.reach``; docs/checking.md, "Mutants"): a site no sequence
reaches leaves the mutated check exactly as honest, and below the sequences that first
reach it ``tests.fuzz.mutants.subtrees`` finds what the mutated check finds. Each half
is checked here against the mutated check itself."""

import json
from pathlib import Path

import pytest

from simkit.check.scope import load_scope
from tests.fuzz.mutants import BY_NAME, check_mutant
from tests.fuzz.mutants.reach import main as reach
from tests.fuzz.mutants.reach import site
from tests.fuzz.mutants.subtrees import _after
from tests.fuzz.mutants.subtrees import main as subtrees

SIMKIT = Path(__file__).parent.parent.parent / "simkit"
TINY = str(Path(__file__).parent.parent / "check" / "tiny.toml")
PUSH = "push-first-seq-reuses-counter"
PULL = "pull-serves-superseded-rows"  # first run at depth 1, killed at depth 2 (tiny scope)
SHARE = "push-ops-share-range-end"  # first run at depth 1, holds to depth 2 (tiny scope)
BLOB = "expired-blob-still-served"  # the tiny scope fetches no blob


def test_site_is_the_code_lines_the_snippet_spans():
    path, lines = site(BY_NAME[PUSH], SIMKIT)
    source = Path(path).read_text().splitlines()
    assert len(lines) == 1 and "first = graph.seq + 1" in source[lines[0] - 1]


def test_a_site_compiled_otherwise_widens_to_its_body_not_its_def_line():
    """A change that adds a local recompiles the whole function: every body line is the
    site, but not the ``def`` line, which the class body runs at import (with it, the
    site would count as reached in every world's set-up)."""
    path, lines = site(BY_NAME["blob-delete-skips-lookup"], SIMKIT)
    source = Path(path).read_text().splitlines()
    assert "def _delete_blob" in source[lines[0] - 2]
    assert "return json_response(200" in source[lines[-1] - 1]


def test_the_mutated_check_differs_only_below_the_sequences_reaching_its_site(tmp_path):
    rows = reach(2, tmp_path / "reach", "RELAY", scope=TINY)["mutants"]
    assert rows[PULL]["shortest"] == rows[SHARE]["shortest"] == 1
    assert not rows[BLOB]["reached"]
    verdicts = {}
    for name in (PULL, SHARE, BLOB):
        into = tmp_path / name
        run = check_mutant(BY_NAME[name], into, depth=2, timeout=300, scope=TINY)
        assert run.returncode in (0, 1), run.stderr
        verdicts[name] = json.loads((into / "check.json").read_text())["finding"]
    assert verdicts[BLOB] is None  # never runs: holds as the honest check does
    assert verdicts[SHARE] is None and verdicts[PULL]["depth"] == 2
    below = subtrees(tmp_path / "reach", 2, tmp_path / "rows.jsonl", [PULL, SHARE], TINY)
    assert [row["killed"] for row in below] == [True, False]
    assert len(below[0]["sequence"]) == 2
    assert below[0]["broke"] == verdicts[PULL]["violations"][0]["invariant"]


def test_after_a_letter_judges_below_it_and_below_it_after_every_other_letter():
    """``after:RULE`` (F45): the sequences a digest blind to that letter never extended."""
    letters = load_scope(TINY).alphabet
    [advance] = [i for i, step in enumerate(letters) if step.RULE == "advance"]
    roots = _after("after:advance", [PUSH], TINY)[PUSH]
    assert roots[0] == [advance]
    assert sorted(root[0] for root in roots[1:]) == [i for i in range(len(letters)) if i != advance]
    assert all(root[-1] == advance for root in roots)
    assert _after(str(SIMKIT), [PUSH], TINY) is None  # a reach directory, not a letter
    with pytest.raises(ValueError, match="2 letters of rule 'restart'"):
        _after("after:restart", [PUSH], TINY)
