"""Scenario files: the library loads, and every kind of mistake is a one-line error
naming the file, the key and what was expected."""

import json

import pytest
from click.testing import CliRunner

from simkit.cli import main
from simkit.scenario.load import ScenarioError, load_library, load_scenario

GOOD = """
description = "a small world"
seed = 5
duration = 60
graphs = ["u:alice"]

[members]
alice = ["a1", "a2"]

[workload]
interval = 10
"""


def _write(tmp_path, text, name="s.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_whole_library_loads_with_a_description_each():
    scenarios = load_library("scenarios")
    assert len(scenarios) >= 15
    assert all(s.description for s in scenarios)
    assert len({s.name for s in scenarios}) == len(scenarios)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: "bogus = 1\n" + t, "unknown key 'bogus'"),
        (lambda t: t.replace("seed = 5", 'seed = "five"'), "seed: expected a integer"),
        (
            lambda t: t.replace("interval = 10", 'interval = "fast"'),
            "workload.interval: expected a number",
        ),
        (lambda t: t + "\n[network]\nloss = 0.1\n", "unknown key 'network.loss'"),
        (lambda t: t + "\n[network]\nrequest_loss = 2.0\n", "probability"),
        (lambda t: t.replace('graphs = ["u:alice"]', 'graphs = ["u:zed"]'), "graph 'u:zed'"),
        (
            lambda t: t + '\n[[schedule]]\nat = 5\naction = "explode"\n',
            "schedule[0].action: expected one of",
        ),
        (
            lambda t: t + '\n[[schedule]]\nat = 5\naction = "partition"\n',
            "until: expected a number (required)",
        ),
        (
            lambda t: t + '\n[[schedule]]\nat = 5\naction = "adversary"\nmode = "nice"\n',
            "mode: expected one of",
        ),
        (lambda t: t + '\n[expect]\ninvariants = ["happiness"]\n', "unknown invariant 'happiness'"),
        (
            lambda t: (
                t + '\n[[schedule]]\nat = 5\naction = "adversary"\nmode = "substitute-keys"\n'
            ),
            "'victim' for mode 'substitute-keys'",
        ),
        (lambda t: t + "\n[relay]\nmax_ops_per_push = 5000\n", "[relay]"),
        (
            lambda t: t.replace('alice = ["a1", "a2"]', 'alice = ["a1", "a:2"]'),
            "not a safe, unique device ID",
        ),
        (lambda t: t + "\n[members\n", "not valid TOML"),
        (
            lambda t: "workload = 3\n" + t.replace("[workload]\ninterval = 10", ""),
            "workload: expected a table",
        ),
    ],
)
def test_each_kind_of_mistake_names_file_key_and_expectation(tmp_path, change, message):
    path = _write(tmp_path, change(GOOD))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(path) in str(info.value)
    assert message in str(info.value)


def test_a_missing_file_and_an_empty_folder_are_clear_errors(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "none.toml")
    with pytest.raises(ScenarioError, match=r"no \*\.toml"):
        load_library(tmp_path)


def test_simkit_run_on_a_bad_file_prints_one_line_and_no_traceback(tmp_path):
    path = _write(tmp_path, "bogus = 1\n" + GOOD)
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 2
    assert "unknown key 'bogus'" in result.output and "Traceback" not in result.output


def test_simkit_run_prints_the_trace_hash_and_json_with_the_summary(tmp_path):
    path = _write(tmp_path, GOOD + "\n[expect]\nsettled = true\n")
    runner = CliRunner()
    table = runner.invoke(main, ["run", str(path)])
    assert table.exit_code == 0, table.output
    hashes = [line.split()[-1] for line in table.output.splitlines() if "trace-hash:" in line]
    document = runner.invoke(main, ["run", str(path), "--json"])
    (summary,) = json.loads(document.stdout)
    assert {"scenario", "seed", "passed", "trace_hash", "invariants"} <= set(summary)
    assert summary["passed"] and summary["trace_hash"] == hashes[0]
    again = runner.invoke(main, ["run", str(path), "--json", "--seed", "6"])
    assert json.loads(again.stdout)[0]["trace_hash"] != summary["trace_hash"]


def test_simkit_run_exits_1_when_an_expectation_fails(tmp_path):
    path = _write(tmp_path, GOOD + '\n[expect]\nalarms = ["a1"]\n')
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 1 and "FAIL" in result.output and "alarm by a1" in result.output


def test_simkit_list_names_every_scenario():
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 0
    assert "adversary-rollback" in result.output and "bootstrap" in result.output
