"""Fuzzing a release (docs/releases.md): the machines draw upgrades, reproducers keep
them, and each of Versioning rule 3's compatibility clauses has a planted break
(tests/fuzz/compat_variants.py) whose kept finding still breaks it, and holds once
the planted version is the honest one."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from simkit.cli import main
from simkit.fuzz.reproducer import Reproducer, ReproducerError, replay
from simkit.fuzz.runner import fuzz
from simkit.sim.variant import HONEST
from simkit.sim.versions import newer_client

FINDINGS = sorted(Path(__file__).with_name("release_findings").glob("*.json"))
PLANTED = "tests.fuzz.compat_variants:"
CLAUSES = {  # the planted break of each clause, and who catches it
    "epoch-optional": "liveness",
    "self-sig-optional": "device-model",
    "excluding-dropped": "device-model",
    "no-log-route": "log-unverified",
    "unknown-members": "no-partition",
}


def test_every_clause_has_a_kept_finding():
    assert sorted(p.stem for p in FINDINGS) == sorted(CLAUSES)


@pytest.mark.parametrize("path", FINDINGS, ids=[p.stem for p in FINDINGS])
def test_versioning_3_planted_break_is_caught_and_the_honest_release_holds(path):
    repro = Reproducer.load(path)
    found = replay(repro)
    assert CLAUSES[path.stem] in {v.invariant for v in found.violations}, found.violations
    honest = _unplanted(repro)
    held = replay(honest)
    assert not held.violations, "\n".join(str(v) for v in held.violations)


def _unplanted(repro: Reproducer) -> Reproducer:
    """The same run with the planted version replaced by the protocol as specified."""
    data = repro.to_json()
    for key in ("variant", "base"):
        if (data.get(key) or "").startswith(PLANTED):
            data[key] = HONEST.name
    return Reproducer.from_json(data)


def test_a_fuzzed_release_draws_upgrades_of_devices_and_the_relay():
    result = fuzz(newer_client, seconds=120, seed=3, max_steps=25, examples=20,
                  release=frozenset({"rollout"}), shrink=False)  # fmt: skip
    counts = result.coverage.counts
    assert result.failure is None, result.failure
    assert counts["release"] == 20 and counts["upgrade device"] and counts["upgrade relay"]
    assert counts["release new device, old relay"] and counts["release old device, new relay"]


def test_a_release_reproducer_keeps_its_base_and_rollout(tmp_path):
    data = json.loads(FINDINGS[0].read_text())
    assert data["base"] and data["world"]["rollout"] is not None
    repro = Reproducer.from_json(data)
    repro.write(tmp_path / "r.json")
    again = Reproducer.load(tmp_path / "r.json")
    assert (again.base, again.params.rollout) == (repro.base, repro.params.rollout)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"base": None}, 'needs both "base"'),
        ({"world": {"rollout": None}}, 'needs both "base"'),
        ({"base": None, "world": {"rollout": None}}, "nothing to upgrade"),
        ({"base": "no-such-version"}, '"base" must be null'),
        ({"world": {"rollout": {"relay_new": 1, "devices_new": []}}}, "rollout.relay_new"),
        ({"world": {"rollout": {"relay_new": True, "devices_new": ["zz"]}}}, "rollout.devices_new"),
        ({"steps": [{"rule": "upgrade"}]}, "target"),
        ({"steps": [{"rule": "upgrade", "target": "a9"}]}, "does not exist"),
    ],
)
def test_a_broken_release_reproducer_names_what_is_wrong(change, message):
    data = json.loads(FINDINGS[0].read_text())
    for key, value in change.items():
        if key == "world":
            data["world"] = {**data["world"], **value}
        else:
            data[key] = value
    with pytest.raises(Exception, match=message) as raised:
        Reproducer.from_json(data)
    assert isinstance(raised.value, ReproducerError | ValueError)


def test_cli_base_without_a_release_is_a_usage_error():
    done = CliRunner().invoke(main, ["fuzz", "--base", "older-relay", "--time", "1"])
    assert done.exit_code == 2 and "--rollout or --mix" in done.output


def test_cli_a_release_from_a_version_to_itself_is_a_usage_error():
    """--rollout with no --variant and no --base: from the protocol as specified to
    itself, a release of nothing (it once ran and said "no violation")."""
    for command in ("fuzz", "campaign"):
        done = CliRunner().invoke(main, [command, "--rollout", "--time", "1"])
        assert done.exit_code == 2, done.output
        assert "both are honest" in done.output and "--variant" in done.output


def test_cli_an_unknown_base_is_a_usage_error_naming_it():
    done = CliRunner().invoke(main, ["fuzz", "--rollout", "--base", "nope", "--time", "1"])
    assert done.exit_code == 2 and "--base nope" in done.output


def test_cli_campaign_takes_the_release_options_and_refuses_them_with_mutants():
    runner = CliRunner()
    alone = runner.invoke(main, ["campaign", "--base", "older-relay", "--time", "1"])
    assert alone.exit_code == 2 and "--rollout or --mix" in alone.output
    mutants = ["campaign", "--rollout", "--mutants", "tests.fuzz.mutants:CLIENT_ALL", "--time", "1"]
    done = runner.invoke(main, mutants)
    assert done.exit_code == 2 and "do not go together" in done.output
