"""``simkit check`` on the command line: its verdict and exit codes (0 held, 1 a
finding, 2 bad input, 3 no verdict)."""

import json
from pathlib import Path

from click.testing import CliRunner

from simkit.cli import main

TINY = Path(__file__).with_name("tiny.toml")


def run(*args):
    return CliRunner().invoke(main, ["check", *map(str, args)])


def test_a_complete_depth_is_the_verdict_and_exits_0(tmp_path):
    result = run("--scope", TINY, "--depth", 1, "--workers", 1, "--json", tmp_path / "c.json")
    assert result.exit_code == 0, result.output
    assert "depth 1 complete over scope tiny: 4 sequences, 4 distinct states, 0 violations" in (
        result.output
    )
    figures = json.loads((tmp_path / "c.json").read_text())
    assert figures["completed"] == 1 and figures["finding"] is None


def test_a_violation_is_a_reproducer_and_exits_1(tmp_path):
    out = tmp_path / "r.json"
    result = run("--scope", TINY, "--depth", 2, "--workers", 1, "--out", out,
                 "--variant", "tests.fuzz.variants:log_loser")  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "VIOLATION at depth 1 (no shorter sequence fails)" in result.output
    assert "caused by the change" in result.output
    assert json.loads(out.read_text())["steps"][0]["rule"] == "concurrent"


def test_a_missing_or_broken_scope_is_named_and_exits_2(tmp_path):
    result = run("--scope", tmp_path / "nope.toml")
    assert result.exit_code == 2 and "nope.toml: cannot read the scope" in result.output
    bad = tmp_path / "bad.toml"
    bad.write_text('[world]\nseed = 1\n[[steps]]\nrule = "heal"\ncolour = "red"\n')
    result = run("--scope", bad)
    assert result.exit_code == 2 and "bad.toml: steps[0] (heal): unknown field 'colour'" in (
        result.output
    )


def test_a_run_cut_short_before_any_depth_gives_no_verdict_and_exits_3():
    result = run("--scope", TINY, "--depth", 2, "--workers", 1, "--time", "1e-9")
    assert result.exit_code == 3, result.output
    assert "no depth complete" in result.output
