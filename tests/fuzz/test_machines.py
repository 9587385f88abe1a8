"""The state machines on the honest stack pass a short, derandomized run; the CLI
fuzzes, writes reproducers, and replays them exactly."""

import inspect
import json

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RULE_MARKER, run_state_machine_as_test

from simkit.cli import main
from simkit.fuzz import AdversaryMachine, HonestMachine
from simkit.fuzz.attacks import CLASSIC_MODES
from simkit.fuzz.machine import machine_for
from simkit.fuzz.params import CLASSIC, WorldParams
from simkit.sim.variant import HONEST

SHORT = settings(
    max_examples=6,
    stateful_step_count=15,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def test_honest_machine_keeps_every_invariant_under_faults_skew_and_crashes():
    run_state_machine_as_test(HonestMachine, settings=SHORT)


def test_adversary_machine_keeps_the_invariants_that_hold_against_a_malicious_relay():
    run_state_machine_as_test(AdversaryMachine, settings=SHORT)


def test_simkit_fuzz_on_the_honest_stack_exits_0_and_names_the_invariants(tmp_path):
    result = CliRunner().invoke(
        main, ["fuzz", "--time", "3", "--seed", "1", "--max-steps", "8", "--workers", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "no violation" in result.output
    assert "no-lost-write" in result.output and "alarm-soundness" in result.output


def test_simkit_fuzz_catches_a_variant_writes_a_reproducer_and_replay_matches(tmp_path):
    out = tmp_path / "repro.json"
    runner = CliRunner()
    result = runner.invoke(
        main,
        ["fuzz", "--variant", "tests.fuzz.variants:max_seq", "--time", "60", "--shrink-time",
         "3", "--seed", "1", "--max-steps", "12", "--out", str(out), "--workers", "1"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "VIOLATION" in result.output and out.exists()
    repro = json.loads(out.read_text())
    assert repro["variant"] == "tests.fuzz.variants:max_seq" and repro["steps"]
    first = runner.invoke(main, ["replay", str(out)])
    second = runner.invoke(main, ["replay", str(out)])
    assert first.exit_code == second.exit_code == 1
    hashes = [
        line for r in (first, second) for line in r.output.splitlines() if "trace-hash" in line
    ]
    assert len(hashes) == 2 and hashes[0] == hashes[1]
    assert "violated" in first.output


def test_bad_variant_and_missing_reproducer_are_one_line_errors():
    runner = CliRunner()
    bad = runner.invoke(main, ["fuzz", "--variant", "no_such_module:x", "--time", "1"])
    assert (
        bad.exit_code == 2
        and "no module no_such_module" in bad.output
        and "Traceback" not in bad.output
    )
    missing = runner.invoke(main, ["replay", "/no/such/file.json"])
    assert missing.exit_code == 2 and "cannot read" in missing.output


CLASSIC_STEPS = {
    "advance", "write", "concurrent", "refresh", "link", "approve", "reject", "revoke",
    "rotate", "recover", "restart", "crash", "jump", "partition", "heal", "errors",
    "relay-crash", "adversary", "steal",
}  # fmt: skip
"""The steps commit 685eb33's machines took (simkit bench fuzz compares equal work)."""


@pytest.mark.parametrize("honest", [True, False])
def test_classic_work_takes_only_the_steps_685eb33s_machines_took(honest):
    machine = machine_for(HONEST, honest=honest, classic=True)
    runs = []

    class Recorded(machine):
        def teardown(self):
            runs.append([step.to_json() for step in self.steps])
            super().teardown()

    run_state_machine_as_test(Recorded, settings=settings(SHORT, max_examples=12))
    steps = [step for run in runs for step in run]
    assert steps and {step["rule"] for step in steps} <= CLASSIC_STEPS
    for step in steps:
        if step["rule"] == "errors":
            assert step["seconds"] in (5, 30) and "route" not in step
        if step["rule"] == "adversary":
            assert step["mode"] in {mode for mode, _ in CLASSIC_MODES}


CLASSIC_RULES = {
    True: {"advance", "write", "concurrent_write", "refresh", "link", "approve_or_reject",
           "revoke", "rotate", "recover", "crash_or_restart", "jump_clock", "partition",
           "heal", "relay_trouble", "relay_crash"},
    False: {"advance", "write", "concurrent_write", "refresh", "link", "approve_or_reject",
            "revoke", "rotate", "recover", "crash_or_restart", "jump_clock", "malicious",
            "steal"},
}  # fmt: skip
"""The rules of commit 685eb33's honest and adversary machines."""


@pytest.mark.parametrize("honest", [True, False])
def test_classic_work_can_run_only_the_rules_685eb33s_machines_had(honest):
    machine = machine_for(HONEST, honest=honest, classic=True)()
    try:
        machine.start(WorldParams(1, "observe", rules=CLASSIC[honest]))
        rules = [getattr(f, RULE_MARKER, None) for _, f in inspect.getmembers(type(machine))]
        runnable = {
            rule.function.__name__
            for rule in rules
            if rule is not None and all(check(machine) for check in rule.preconditions)
        }
        assert runnable == CLASSIC_RULES[honest]
    finally:
        machine.driver.close()
