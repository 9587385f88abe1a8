"""What a check can find in a mutant is bounded by which of its lines the honest check
runs (``tests.fuzz.mutants.reach``; docs/checking.md, "Mutants"): a site no sequence
reaches leaves the mutated check exactly as honest, and below the sequences that first
reach it ``tests.fuzz.mutants.subtrees`` finds what the mutated check finds. Each half
is checked here against the mutated check itself."""

import json
from pathlib import Path

from tests.fuzz.mutants import BY_NAME, check_mutant
from tests.fuzz.mutants.reach import main as reach
from tests.fuzz.mutants.reach import site
from tests.fuzz.mutants.subtrees import main as subtrees

TINY = str(Path(__file__).parent.parent / "check" / "tiny.toml")
PUSH = "push-first-seq-reuses-counter"  # every write pushes: reached at depth 1
BLOB = "expired-blob-still-served"  # the tiny scope fetches no blob


def test_site_is_the_code_lines_the_snippet_spans():
    path, lines = site(BY_NAME[PUSH], Path(__file__).parent.parent.parent / "simkit")
    source = Path(path).read_text().splitlines()
    assert len(lines) == 1 and "first = graph.seq + 1" in source[lines[0] - 1]


def test_the_mutated_check_differs_only_below_the_sequences_reaching_its_site(tmp_path):
    rows = reach(1, tmp_path / "reach", "RELAY", scope=TINY)["mutants"]
    assert rows[PUSH]["reached"] and rows[PUSH]["shortest"] == 1
    assert not rows[BLOB]["reached"]
    runs = {}
    for name in (PUSH, BLOB):
        into = tmp_path / name
        runs[name] = check_mutant(BY_NAME[name], into, depth=1, timeout=300, scope=TINY)
    assert runs[BLOB].returncode == 0, runs[BLOB].stdout  # never runs: holds as honest
    assert runs[PUSH].returncode == 1, runs[PUSH].stdout
    found = json.loads((tmp_path / PUSH / "check.json").read_text())["finding"]
    (below,) = subtrees(tmp_path / "reach", 1, tmp_path / "rows.jsonl", [PUSH], TINY)
    assert below["killed"] and len(below["sequence"]) == found["depth"]
    assert below["broke"] == found["violations"][0]["invariant"]
