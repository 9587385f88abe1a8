"""Scenario files: the library loads, and every kind of mistake is a one-line error
naming the file, the line, the key and what was expected."""

import json
import os
import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path

import pytest
from click.testing import CliRunner

from simkit.cli import main
from simkit.invariants import NAMES
from simkit.scenario.actions import MODE_PARAMS
from simkit.scenario.load import ScenarioError, library_path, load_library, load_scenario
from simkit.sim.adversary import MODES

GOOD = """
description = "a small world"
seed = 5
duration = 60
graphs = ["u:alice", "g:team"]

[members]
alice = ["a1", "a2"]
bob = ["b1"]

[groups]
team = ["alice", "bob"]

[workload]
interval = 10
"""


def _write(tmp_path, text, name="s.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _action(**keys) -> str:
    body = "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())
    return f"\n[[schedule]]\n{body}"


def test_the_whole_library_loads_with_a_description_each():
    scenarios = load_library("scenarios")
    assert len(scenarios) >= 15
    assert all(s.description for s in scenarios)
    assert len({s.name for s in scenarios}) == len(scenarios)


MISTAKES = [
    # (what the file does wrong, the change, what the error must say)
    ("unknown top key", lambda t: "bogus = 1\n" + t, "unknown key 'bogus'"),
    ("wrong type", lambda t: t.replace("seed = 5", 'seed = "five"'), "seed: expected an integer"),
    (
        "wrong type in a table",
        lambda t: t.replace("interval = 10", 'interval = "fast"'),
        "workload.interval: expected a number",
    ),
    ("unknown key in a table", lambda t: t + "\n[network]\nloss = 0.1\n", "'network.loss'"),
    (
        "probability above 1",
        lambda t: t + "\n[network]\nrequest_loss = 2.0\n",
        "network.request_loss: expected a number >= 0 and <= 1, got 2.0",
    ),
    (
        "graph of an unknown member",
        lambda t: t.replace('"u:alice", ', '"u:zed", '),
        "graphs: expected graphs u:<member>",
    ),
    ("no graphs", lambda t: t.replace('graphs = ["u:alice", "g:team"]', "graphs = []"), "graphs:"),
    (
        "unknown action",
        lambda t: t + _action(at=5, action="explode"),
        "schedule[0].action: expected one of 'partition'",
    ),
    (
        "a required key missing",
        lambda t: t + _action(at=5, action="partition", devices=["a1"]),
        "schedule[0].until: missing; expected a number",
    ),
    (
        "unknown adversary mode",
        lambda t: t + _action(at=5, action="adversary", mode="nice"),
        "schedule[0].mode: expected one of accept-revoked",
    ),
    (
        "unknown invariant",
        lambda t: t + '\n[expect]\ninvariants = ["happiness"]\n',
        "expect.invariants: expected invariant names among convergence",
    ),
    (
        "a mode's required parameter missing",
        lambda t: t + _action(at=5, action="adversary", mode="substitute-keys"),
        "'victim' for mode 'substitute-keys'",
    ),
    (
        "an unknown mode parameter",
        lambda t: (
            t
            + '\n[[schedule]]\nat = 5\naction = "adversary"\nmode = "fork"\nparams = {merge = 9}\n'
        ),
        "unknown key 'schedule[0].params.merge'",
    ),
    (
        "a relay looser than the spec",
        lambda t: t + "\n[relay]\nmax_ops_per_push = 5000\n",
        "relay: max_ops_per_push=5000 is looser",
    ),
    (
        "an unsafe device ID",
        lambda t: t.replace('alice = ["a1", "a2"]', 'alice = ["a1", "a:2"]'),
        "members.alice: expected a list of safe, unique device IDs",
    ),
    ("TOML syntax", lambda t: t + "\n[members\n", "not valid TOML"),
    (
        "a table given as a number",
        lambda t: "workload = 3\n" + t.replace("[workload]\ninterval = 10", ""),
        "workload: expected a table, got 3",
    ),
    # what issue 17 saw
    (
        "a negative duration",
        lambda t: t.replace("duration = 60", "duration = -10"),
        "duration: expected a number > 0 and <= 86400 (seconds), got -10",
    ),
    (
        "revoke names an unknown device",
        lambda t: t + _action(at=5, action="revoke", by="a1", device="a9"),
        "schedule[0].device: expected a device of the world (a1, a2, b1), got 'a9'",
    ),
    (
        "crash-device names an unknown device",
        lambda t: t + _action(at=5, action="crash-device", device="zz"),
        "schedule[0].device: expected a device of the world",
    ),
    (
        "a negative clock offset",
        lambda t: t + "\n[clocks]\nmax_offset_ms = -5\n",
        "clocks.max_offset_ms: expected an integer >= 0",
    ),
    (
        "an unknown by",
        lambda t: t + _action(at=5, action="rotate", by="nobody", graph="u:alice"),
        "schedule[0].by: expected a device of the world",
    ),
    (
        "partition names an unknown device",
        lambda t: t + _action(at=5, action="partition", devices=["a1", "q7"], until=9),
        "schedule[0].devices: expected devices of the world",
    ),
    (
        "until before at",
        lambda t: t + _action(at=30, action="crash-relay", until=20),
        "schedule[0].until: expected a number > 30 (seconds, after at (30)), got 20",
    ),
    (
        "rotate names an unknown graph",
        lambda t: t + _action(at=5, action="rotate", by="a1", graph="g:nope"),
        "schedule[0].graph: expected one of the scenario's graphs (g:team, u:alice)",
    ),
    (
        "an interval of 0 (it hung)",
        lambda t: t.replace("interval = 10", "interval = 0"),
        "workload.interval: expected a number >= 0.1",
    ),
    (
        "a typo'd action key",
        lambda t: t + '\n[[schedule]]\nat = 5\nacton = "partition"\n',
        "schedule[0].action: missing; expected one of partition, crash-device",
    ),
    (
        "an unknown member in a group",
        lambda t: t.replace('team = ["alice", "bob"]', 'team = ["alice", "zed"]'),
        "groups.team: unknown member 'zed'; members are alice, bob",
    ),
    ("an empty file", lambda t: "", "empty; a scenario needs at least [members] and graphs"),
    # and the rest of the class
    (
        "a rotation by a member outside the graph",
        lambda t: t + _action(at=5, action="rotate", by="b1", graph="u:alice"),
        "schedule[0].by: expected a device whose member belongs to u:alice ('bob' does not)",
    ),
    (
        "a revocation of another member's device",
        lambda t: t + _action(at=5, action="revoke", by="a1", device="b1"),
        "schedule[0].device: expected a device of 'alice'",
    ),
    (
        "an action after the run",
        lambda t: t + _action(at=90, action="crash-relay", until=100),
        "schedule[0].at: expected a number >= 0 and <= 60 (seconds, within the run), got 90",
    ),
    (
        "a device approved before it is linked",
        lambda t: (
            t
            + _action(at=5, action="approve", by="a1", device="a3")
            + _action(at=20, action="link", member="alice", device="a3")
        ),
        "schedule[0].device: expected a device that exists at 5 s ('a3' is created later)",
    ),
    (
        "a ceremony by a device that is down",
        lambda t: (
            t
            + _action(at=5, action="crash-device", device="a1", restart_after=30)
            + _action(at=10, action="rotate", by="a1", graph="u:alice")
        ),
        "schedule[1].by: expected a device that is up at 10 s ('a1' is down from 5 s to 35 s)",
    ),
    (
        "an act by a revoked device",
        lambda t: (
            t
            + _action(at=5, action="revoke", by="a1", device="a2")
            + _action(at=10, action="rotate", by="a2", graph="u:alice")
        ),
        "schedule[1].by: expected a device not revoked by then (schedule[0] revoked it)",
    ),
    (
        "a leave of a member not in the group",
        lambda t: (
            t
            + _action(at=5, action="leave", group="team", member="bob")
            + _action(at=9, action="leave", group="team", member="bob")
        ),
        "schedule[1].member: expected a member that can leave 'team' ('bob' is not in it then)",
    ),
    (
        "an error burst that is no error",
        lambda t: t + _action(at=5, action="error-burst", status=200, until=9),
        "schedule[0].status: expected an integer >= 429 and <= 599",
    ),
    (
        "an invariant that cannot apply to a malicious relay",
        lambda t: (
            t
            + _action(at=5, action="adversary", mode="fork")
            + '\n[expect]\ninvariants = ["convergence"]\n'
        ),
        "'convergence' cannot be checked in a run with a malicious relay",
    ),
    (
        "an unknown event name (it would pass silently in absent)",
        lambda t: t + '\n[expect]\nabsent = [{ name = "log.alarmm" }]\n',
        "expect.absent[0].name: expected an event name",
    ),
    (
        "an unknown device in alarms",
        lambda t: t + '\n[expect]\nalarms = ["b9"]\n',
        "expect.alarms: expected devices of the world",
    ),
    (
        "edit and delete above 1",
        lambda t: t.replace("interval = 10", "interval = 10\nedit = 0.7\ndelete = 0.5"),
        "workload.delete: edit + delete must be at most 1",
    ),
    (
        "a subscription to an unknown graph",
        lambda t: t + '\n[[subscriptions]]\ndevice = "a1"\ngraph = "g:other"\n',
        "subscriptions[0].graph: expected one of the scenario's graphs",
    ),
    (
        "an unknown capability",
        lambda t: t + '\n[[capabilities]]\nmember = "bob"\ngroup = "team"\nallow = ["wrte"]\n',
        "capabilities[0].allow: expected capabilities among rotate, write",
    ),
    (
        "a variant that cannot be imported",
        lambda t: 'variant = "no_such_module_xyz:change"\n' + t,
        "variant: ",
    ),
    (
        "an upgrade in a world of one version",
        lambda t: t + _action(at=10, action="upgrade", target="a1"),
        "release: missing; expected a [release] table",
    ),
    (
        "an upgrade of a device that does not exist",
        lambda t: (
            t
            + '\n[release]\nbase = "older-relay"\n'
            + _action(at=10, action="upgrade", target="zed")
        ),
        'target: expected "relay" or a device of the world',
    ),
    (
        "a release starting an unknown device on the new version",
        lambda t: t + '\n[release]\nnew_devices = ["zed"]\n',
        "release.new_devices: expected devices of the world",
    ),
    (
        "an upgrade of a device already on the new version",
        lambda t: (
            t
            + '\n[release]\nnew_devices = ["b1"]\n'
            + _action(at=10, action="upgrade", target="b1")
        ),
        "target: expected a party still on the base version",
    ),
    (
        "a second upgrade of the relay",
        lambda t: (
            t
            + "\n[release]\n"
            + _action(at=10, action="upgrade", target="relay")
            + _action(at=20, action="upgrade", target="relay")
        ),
        "schedule[1].target: expected a party still on the base version",
    ),
    (
        "a device listed twice as starting new",
        lambda t: t + '\n[release]\nnew_devices = ["b1", "b1"]\n',
        "release.new_devices: expected each device once",
    ),
    (
        "a release whose relay starts on neither version",
        lambda t: t + '\n[release]\nrelay = "newest"\n',
        "release.relay: expected one of",
    ),
    (
        "a release from a version that does not exist",
        lambda t: t + '\n[release]\nbase = "oldest"\n',
        "release.base: ",
    ),
]


def test_a_release_scenario_runs_its_upgrades_in_order(tmp_path):
    text = (
        GOOD.replace("[members]", 'variant = "newer-client"\n\n[members]')
        + '\n[release]\nbase = "older-relay"\nnew_devices = ["b1"]\n'
        + _action(at=20, action="upgrade", target="a1")
        + _action(at=40, action="upgrade", target="relay")
    )
    done = CliRunner().invoke(main, ["run", str(_write(tmp_path, text)), "--json"])
    assert done.exit_code == 0, done.output


@pytest.mark.parametrize(
    ("change", "message"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_each_kind_of_mistake_is_one_line_naming_file_key_and_expectation(
    tmp_path, change, message
):
    path = _write(tmp_path, change(GOOD))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    text = str(info.value)
    assert text.startswith(str(path)) and "\n" not in text
    assert message in text


def test_the_error_names_the_line_of_the_key(tmp_path):
    text = GOOD + _action(at=30, action="crash-relay", until=20)
    lines = text.splitlines()
    until = next(i for i, line in enumerate(lines, start=1) if line.startswith("until"))
    with pytest.raises(ScenarioError, match=rf"^\S+s\.toml:{until}: schedule\[0\]\.until:"):
        load_scenario(_write(tmp_path, text))
    broken = GOOD.replace("interval = 10", "interval = ?")
    line = next(i for i, t in enumerate(broken.splitlines(), start=1) if t.startswith("interval"))
    with pytest.raises(ScenarioError, match=rf"broken\.toml:{line}: not valid TOML: .*line {line}"):
        load_scenario(_write(tmp_path, broken, "broken.toml"))


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
    assert len(result.output.strip().splitlines()) == 1


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


def test_an_invariant_that_did_not_run_is_not_checked_never_a_pass(tmp_path):
    adversary = GOOD + _action(at=20, action="adversary", mode="fork", targets=["b1"])
    result = CliRunner().invoke(main, ["run", str(_write(tmp_path, adversary)), "--json"])
    (summary,) = json.loads(result.stdout)
    by_name = {inv["name"]: inv for inv in summary["invariants"]}
    assert by_name["convergence"]["passed"] is None
    assert by_name["convergence"]["status"] == "not checked"
    assert by_name["convergence"]["note"] == (
        "applies only with an honest relay and no thief; "
        "this run had a malicious relay or a stolen device"
    )
    assert by_name["alarm-completeness"]["passed"] is not None
    listed = GOOD + '\n[expect]\ninvariants = ["lww"]\n'
    table = CliRunner().invoke(main, ["run", str(_write(tmp_path, listed, "listed.toml"))])
    unchecked = len(NAMES) - 1
    assert f"1/1 invariants held, {unchecked} not checked" in table.output, table.output


def test_an_expected_event_counts_after_setup_unless_it_says_during_setup(tmp_path):
    run = GOOD + '\n[expect]\nevents = [{ name = "graph.rotate" }]\n'
    result = CliRunner().invoke(main, ["run", str(_write(tmp_path, run)), "--json"])
    (summary,) = json.loads(result.stdout)
    (check,) = summary["expectations"]
    assert not check["passed"] and "only during setup" in check["detail"]
    setup = run.replace('name = "graph.rotate" }', 'name = "graph.rotate", during = "setup" }')
    result = CliRunner().invoke(main, ["run", str(_write(tmp_path, setup, "b.toml")), "--json"])
    (summary,) = json.loads(result.stdout)
    (check,) = summary["expectations"]
    assert check["passed"] and check["name"] == "graph.rotate during setup"


def test_simkit_list_names_every_scenario():
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 0
    assert "adversary-rollback" in result.output and "bootstrap" in result.output


def test_the_library_ships_with_the_package_and_is_the_scenarios_folder():
    packaged = Path(str(resources.files("simkit") / "library"))
    assert sorted(p.name for p in packaged.glob("*.toml")) == sorted(
        p.name for p in Path("scenarios").glob("*.toml")
    )
    config = tomllib.loads(Path("pyproject.toml").read_text())
    assert "library/*.toml" in config["tool"]["setuptools"]["package-data"]["simkit"]


def test_simkit_list_works_outside_the_repository(tmp_path):
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-m", "simkit.cli", "list"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == len(list(Path("scenarios").glob("*.toml")))
    assert "in " + str(root / "simkit" / "library") in done.stderr
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "mine.toml").write_text(GOOD)
    here = subprocess.run(
        [sys.executable, "-m", "simkit.cli", "list"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert here.stdout.split() == ["mine", "a", "small", "world"]
    assert library_path() == Path("scenarios")  # the repository's own, from its root


def test_every_malicious_mode_has_its_parameters_listed():
    assert set(MODE_PARAMS) == set(MODES)


def test_a_scenario_names_a_variant_by_a_file_beside_it(tmp_path):
    (tmp_path / "changes").mkdir()
    (tmp_path / "changes" / "mine.py").write_text(
        "from simkit.relay import Relay\n"
        "from simkit.sim.variant import Variant\n\n\n"
        "class Mine(Relay):\n"
        "    def _too_far_ahead(self, rev, now):\n"
        "        return super()._too_far_ahead(rev, now)\n\n\n"
        'mine = Variant("mine", "the relay, its skew check restated", relay=Mine)\n'
    )
    path = _write(tmp_path, 'variant = "changes/mine.py:mine"\n' + GOOD)
    scenario = load_scenario(path)
    assert scenario.variant.name == "mine" and scenario.variant_ref == "changes/mine.py:mine"
    wrong = _write(tmp_path, 'variant = "changes/mine.py:theirs"\n' + GOOD, "wrong.toml")
    with pytest.raises(ScenarioError, match=r"wrong\.toml:1: variant: .*no Variant named 'theirs'"):
        load_scenario(wrong)


def test_an_expected_event_after_another_counts_only_once_that_one_happened(tmp_path):
    """expect.events' ``after``: an expectation cannot pass before its situation begins."""
    from simkit.scenario.run import run_scenario

    text = GOOD.replace("duration = 60", "duration = 90") + (
        '\n[[schedule]]\nat = 30\naction = "revoke"\nby = "a1"\ndevice = "a2"\n\n[expect]\n'
        'events = [{ name = "graph.rotate", after = "device.revoke" },\n'
        '          { name = "setup.done", after = "device.revoke" }]\n'
    )
    result = run_scenario(load_scenario(_write(tmp_path, text)))
    checks = {c.name: c for c in result.expectations}
    assert checks["graph.rotate after device.revoke"].passed
    late = checks["setup.done after device.revoke"]
    assert not late.passed and late.detail == "only before device.revoke"
