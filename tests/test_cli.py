"""One exit-code convention for every command (README, "Exit codes"): 0 everything
held, 1 a finding (or an internal error), 2 a usage or input error, 3 no verdict (a
change that never ran). An internal error
is a short message naming what to rerun; its traceback only under ``--debug``."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from click.testing import CliRunner

from simkit.cli import main

ROOT = Path(__file__).resolve().parent.parent
BOOTSTRAP = ROOT / "scenarios" / "bootstrap.toml"


def simkit(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def _reproducer(tmp_path, variant: str | None, steps: list[dict]) -> Path:
    path = tmp_path / "repro.json"
    repro = {"machine": "honest", "variant": variant, "world": {"seed": 0}, "steps": steps}
    path.write_text(json.dumps(repro))
    return path


# -- 0: everything held ------------------------------------------------------------------


@pytest.mark.parametrize("args", [["vectors"], ["list"], ["run", BOOTSTRAP]], ids=str)
def test_a_command_whose_checks_all_hold_exits_0(args):
    result = simkit(*args)
    assert result.exit_code == 0, result.output


def test_replay_of_a_reproducer_that_no_longer_fails_exits_0():
    result = simkit(
        "replay", ROOT / "tests/fuzz/reproducers/sync-now-during-a-background-sync.json"
    )
    assert result.exit_code == 0, result.output
    assert "no violation" in result.output


# -- 1: a finding -------------------------------------------------------------------------


def test_run_exits_1_when_an_expectation_fails(tmp_path):
    path = tmp_path / "alarm.toml"
    path.write_text(BOOTSTRAP.read_text().replace("[expect]\n", '[expect]\nalarms = ["a1"]\n'))
    result = simkit("run", path)
    assert result.exit_code == 1, result.output
    assert "FAIL" in result.output and "alarm by a1" in result.output


def test_replay_exits_1_when_the_reproducer_still_fails(tmp_path):
    path = _reproducer(
        tmp_path, "tests.fuzz.paging_variants:endless_more", [{"rule": "advance", "seconds": 1}]
    )
    result = simkit("replay", path)
    assert result.exit_code == 1, result.output
    assert "[paging]" in result.output


# -- 3: no verdict --------------------------------------------------------------------------

UNUSED = "tests.fuzz.variants:unused"
NEVER = "no verdict: the change was never exercised"


def test_fuzz_of_a_change_whose_method_never_runs_exits_3_and_says_so():
    result = simkit(
        "fuzz",
        "--variant",
        UNUSED,
        "--time",
        "3",
        "--seed",
        "1",
        "--max-steps",
        "4",
        "--workers",
        "1",
    )
    assert result.exit_code == 3, result.output
    assert NEVER in result.output and "overridden methods ran: none" in result.output


def test_replay_and_run_of_a_change_that_never_ran_exit_3(tmp_path):
    result = simkit("replay", _reproducer(tmp_path, UNUSED, [{"rule": "advance", "seconds": 1}]))
    assert result.exit_code == 3, result.output
    assert NEVER in result.output
    scenario = tmp_path / "unused.toml"
    scenario.write_text(f'variant = "{UNUSED}"\n' + BOOTSTRAP.read_text())
    result = simkit("run", scenario)
    assert result.exit_code == 3, result.output
    assert "NONE" in result.output and NEVER in result.output and "1 no verdict" in result.output


def test_a_change_that_departs_is_counted_where_the_run_reports_it(tmp_path):
    """A declared change (push rule 1): a device an hour ahead writes, the relay takes
    it; the replay counts the departure, and the model follows it (no relay-model)."""
    steps = [
        {"rule": "jump", "device": "a1", "ms": 3_600_000},
        {"rule": "write", "device": "a1", "graph": "g:team", "record": "r0", "op": "edit"},
        {"rule": "advance", "seconds": 30},
    ]
    result = simkit("replay", _reproducer(tmp_path, "simkit.bench.changes:any_rev", steps))
    assert result.exit_code == 0, result.output
    assert "departures from the spec in the rules the change declares" in result.output
    assert "push rule 1: " in result.output and "in 1 of 1 examples" in result.output
    assert "relay-model" not in result.output and "no violation" in result.output


# -- 2: usage and input errors ----------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["fuzz", "--time", "-5"], "--time"),
        (["fuzz", "--time", "0"], "--time"),
        (["fuzz", "--max-steps", "0"], "--max-steps"),
        (["fuzz", "--variant", "no_such_module:x", "--time", "1"], "no module no_such_module"),
        (["fuzz", "--variant", "nocolon", "--time", "1"], "MODULE:NAME"),
        (["replay", "/no/such/file.json"], "cannot read"),
        (["run", "/no/such/scenario.toml"], "does not exist"),
        (["list", "/no/such/folder"], "does not exist"),
        (["report", "/no/such/trace.jsonl", "--out", "x"], "does not exist"),
        (["bench", "nothing"], "nothing"),
        (["no-such-command"], "No such command"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_a_usage_or_input_error_exits_2_in_one_line(args, says):
    result = simkit(*args)
    assert result.exit_code == 2, result.output
    assert says in result.output and "Traceback" not in result.output


REPRO = ROOT / "tests/fuzz/reproducers/a-setup-that-outlasts-a-lossy-network.json"
WRITES = [
    ["check", "--depth", "1", "--json", "{bad}/x.json"],
    ["check", "--depth", "1", "--out", "{bad}/r.json"],
    ["fuzz", "--time", "1", "--json", "{bad}/x.json"],
    ["fuzz", "--time", "1", "--out", "{bad}/r.json"],
    ["mutate", "--json", "{bad}/x.json"],
    ["mutate", "--report", "{bad}/dash"],
    ["campaign", "--time", "1", "--json", "{bad}/x.json"],
    ["campaign", "--time", "1", "--report", "{bad}/dash"],
    ["campaign", "--time", "1", "--known", "{bad}/known"],
    ["compare", "--report", "{bad}/dash"],
    ["bench", "--json", "{bad}/x.json", "protocol"],
    ["diff", "http://127.0.0.1:9", "--write-members", "{bad}/m.toml"],
    ["diff", "http://127.0.0.1:9", "--time", "1", "--out", "{bad}/r.json"],
    ["run", str(BOOTSTRAP), "--report", "{bad}/dash"],
    ["replay", str(REPRO), "--report", "{bad}/dash"],
    ["report", "{trace}", "--out", "{bad}/dash"],
]


@pytest.mark.parametrize("args", WRITES, ids=" ".join)
@pytest.mark.parametrize("bad", ["a file", "a link to nothing", "/proc"])
def test_a_path_a_command_could_not_write_exits_2_before_it_runs(tmp_path, args, bad):
    """Before, a check of an hour failed only when it wrote its --json, after its verdict."""
    trace = tmp_path / "trace.jsonl"
    trace.write_text("")
    if bad == "a file":
        bad = tmp_path / "a file"  # a file where a folder should be
        bad.write_text("")
    elif bad == "a link to nothing":
        bad = tmp_path / "dangling"
        bad.symlink_to(tmp_path / "nowhere" / "deep")
    elif not Path("/proc/self").exists():
        pytest.skip("no /proc: a folder that refuses new files even to root")
    result = simkit(*[a.format(bad=bad, trace=trace) for a in args])
    assert result.exit_code == 2, result.output
    assert any(s in result.output for s in ("no folder", "not a folder", "cannot create a file"))


@pytest.mark.parametrize(
    ("option", "path"),
    [("--json", "x.json"), ("--json", "linked/x.json"), ("--json", "old.json"),
     ("--report", "."), ("--report", "new/a/b"), ("--report", "linked/new")],
)  # fmt: skip
def test_a_path_a_command_can_write_is_taken_and_nothing_is_left_there(
    tmp_path, monkeypatch, option, path
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    (tmp_path / "old.json").write_text("{}")
    before = sorted(tmp_path.rglob("*"))
    result = simkit("campaign", option, path, "--time", "0")  # stops at --time, parsed after
    assert result.exit_code == 2 and "'--time'" in result.output, result.output
    assert sorted(tmp_path.rglob("*")) == before


def test_campaigns_default_folder_of_findings_is_checked_before_it_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".hypothesis").write_text("")  # where .hypothesis/simkit-findings would go
    result = simkit("campaign", "--time", "1")
    assert result.exit_code == 2 and "'--known'" in result.output, result.output
    assert "is a file, not a folder" in result.output


def test_a_broken_scenario_file_exits_2(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("duration = \n")
    result = simkit("run", path)
    assert result.exit_code == 2, result.output
    assert "not valid TOML" in result.output and "Traceback" not in result.output


GOOD = {
    "simkit": "0.1.0", "format": 1, "machine": "honest", "variant": None, "world": {"seed": 1},
    "steps": [{"rule": "write", "device": "a1", "graph": "g:team", "record": "r0", "op": "edit"}],
}  # fmt: skip


def _broken(**change) -> str:
    """GOOD with top-level keys replaced, and ``world`` and ``step`` merged into its own."""
    data = json.loads(json.dumps(GOOD))
    data["world"].update(change.pop("world", {}))
    data["steps"][0].update(change.pop("step", {}))
    return json.dumps({**data, **change})


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "a reproducer is a JSON object, not a list"),
        ('{"world": {"seed": 0}}', "missing key 'machine'"),
        (_broken(extra=1), "unknown key 'extra'"),
        (_broken(machine="nope"), '"machine" must be "honest" or "adversary"'),
        (_broken(simkit="9.9.9"), "written by simkit 9.9.9, newer than this simkit"),
        (_broken(format=2), "format 2: this simkit reads format 1"),
        (_broken(trace_hash="abc"), '"trace_hash" must be null or a SHA-256 hex digest'),
        (_broken(world={"seed": "abc"}), "world.seed must be a whole number"),
        (_broken(world={"colour": 1}), "unknown key world.colour (a world has: approval_mode"),
        (_broken(world={"partial": "bogus"}), "world.partial must be null (whole graphs) or one"),
        (_broken(world={"relay": {"max_ops_per_push": "x"}}), "world.relay.max_ops_per_push must"),
        (_broken(world={"relay": {"rate_limits": []}}), "world.relay must be rate limits named"),
        (_broken(world={"request_loss": 7}), "world.request_loss must be a share"),
        (_broken(world={"client": {"recheck_s": "soon"}}), "world.client.recheck_s must be"),
        (_broken(world={"relay": {"speed": 9}}), "world.relay must be a known setting"),
        (_broken(step={"rule": "revok"}), "step 0: unknown rule 'revok'; did you mean 'revoke'?"),
        (_broken(step={"colour": "red"}), "step 0 (write): unknown field 'colour'"),
        (_broken(step={"device": "z9"}), "step 0 (write): device 'z9' does not exist then"),
        (
            _broken(steps=[{"rule": "leave", "member": "zed"}]),
            "step 0 (leave): member 'zed' does not exist then",
        ),
        (
            _broken(steps=[{"rule": "link", "member": "zed", "device": "z6"}]),
            "step 0 (link): member 'zed' does not exist then",
        ),
        (_broken(step={"graph": "g:nowhere"}), "field 'graph' must be one of"),
    ],
)
def test_a_broken_reproducer_exits_2(tmp_path, content, says):
    path = tmp_path / "repro.json"
    path.write_text(content)
    result = simkit("replay", path)
    assert result.exit_code == 2, result.output
    assert says in result.output


def test_a_member_an_invite_brought_in_may_be_named_after_it(tmp_path):
    steps = [
        {"rule": "invite", "by": "a1", "graph": "g:team", "member": "dave", "device": "d1"},
        {"rule": "leave", "member": "dave"},
    ]
    result = simkit("replay", _reproducer(tmp_path, None, steps))
    assert result.exit_code == 0, result.output


def test_a_reproducer_step_with_an_unknown_rule_exits_2(tmp_path):
    result = simkit("replay", _reproducer(tmp_path, None, [{"rule": "dance"}]))
    assert result.exit_code == 2, result.output
    assert "unknown rule 'dance'" in result.output


# -- internal errors: a short message, what to rerun, the traceback under --debug ------


def test_a_crash_inside_a_replayed_world_names_where_and_the_command_to_rerun(tmp_path):
    steps = [{"rule": "advance", "seconds": 5}]
    path = _reproducer(tmp_path, "tests.fuzz.crash_variants:a1_loop_raises", steps)
    result = simkit("replay", path)
    assert result.exit_code == 1, result.output
    assert 'internal error: KeyError: "a bug in a1\'s loop"' in result.output
    assert "in device a1 at virtual time" in result.output
    assert 'during fuzz step 0: {"rule": "advance", "seconds": 5}' in result.output
    assert f"rerun with the full traceback: simkit replay {path} --debug" in result.output
    assert "Traceback" not in result.output
    debug = simkit("replay", path, "--debug")
    assert debug.exit_code == 1
    assert "Traceback (most recent call last)" in debug.output
    assert 'KeyError: "a bug in a1\'s loop"' in debug.output


def test_a_crash_inside_a_scenario_names_the_scenario_to_rerun(monkeypatch):
    async def sweeper_with_a_bug(world) -> None:  # planted: the world's own sweeper raises
        await trio.sleep(1)
        raise KeyError("a bug in the sweeper")

    monkeypatch.setattr("simkit.sim.world.sweeper", sweeper_with_a_bug)
    result = simkit("run", BOOTSTRAP)
    assert result.exit_code == 1, result.output
    assert "internal error: KeyError: 'a bug in the sweeper'" in result.output
    assert "in the relay's sweeper at virtual time" in result.output
    assert f"rerun with the full traceback: simkit run {BOOTSTRAP} --seed 1 --debug" in (
        result.output
    )
    assert "Traceback" not in result.output


def test_a_reader_that_stops_reading_ends_the_command_quietly_with_sigpipes_status():
    """``simkit replay FILE | head``: no "internal error", no traceback, status 141."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "from simkit.cli import main; main()", "list", "scenarios"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader is gone before the first line is written
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 141
    assert err == b""


def test_a_broken_pipe_that_is_not_stdouts_is_an_internal_error(monkeypatch):
    """Only a reader of simkit's own output going away ends a command quietly."""

    def broken(path):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("simkit.scenario.load.load_library", broken)
    result = simkit("list")
    assert result.exit_code == 70  # simkit failed, outside any world: not a finding
    assert "internal error" in result.output
