"""``simkit compare``: a change against what runs today, for a reviewer (docs/reviewing.md)."""

import json

from click.testing import CliRunner

from simkit.cli import main

SMALL = ["scenarios/bootstrap.toml", "scenarios/adversary-stolen-device.toml"]


def compare(tmp_path, *args: str):
    """``simkit compare`` with ``--time 0`` unless a test gives a time (the default fuzzes
    each side for a minute)."""
    args = args if "--time" in args else (*args, "--time", "0")
    out = tmp_path / "cmp"
    done = CliRunner().invoke(main, ["compare", *args, "--report", str(out)])
    data = json.loads((out / "compare.json").read_text()) if done.exit_code in (0, 1, 3) else None
    return done, data, out


def test_the_base_against_itself_flips_nothing_costs_the_same_and_exits_0(tmp_path):
    done, data, out = compare(tmp_path, "--variant", "honest", *SMALL)
    assert done.exit_code == 0, done.output
    assert (
        data["regressed"] == [] and data["cost_grew"] == [] and data["total_request_growth"] == 1.0
    )
    for s in data["scenarios"]:
        assert s["flipped"] == [] and s["request_growth"] == 1.0 and s["divergence"] is None
    assert "nothing regressed" in (out / "compare.md").read_text()


def test_a_change_that_breaks_a_scenario_names_what_flipped_and_where_it_went_apart(tmp_path):
    done, data, out = compare(tmp_path, "--variant", "tests.fuzz.variants:skip_revoked", *SMALL)
    assert done.exit_code == 1
    stolen = next(s for s in data["scenarios"] if s["name"] == "adversary-stolen-device")
    assert (stolen["base_passed"], stolen["change_passed"]) == (True, False)
    (flip,) = [f for f in stolen["flipped"] if f["check"] == "revocation"]
    assert (flip["base"], flip["change"]) == ("pass", "FAIL")
    assert "written by" in flip["why"] and "after its revocation" in flip["why"]
    md = (out / "compare.md").read_text()
    assert "revocation: pass -\\> FAIL (\\[revocation\\] a1 applied" in md
    first = stolen["divergence"]
    assert first["base"] != first["change"] and any(line.startswith(">") for line in first["base"])
    assert data["regressed"] == ["adversary-stolen-device: pass -> FAIL"]
    page = (out / "compare.html").read_text()
    assert "First differences" in page and "record.rejected" in page


def test_a_change_that_only_costs_more_exits_1_past_the_threshold_and_0_below_it(tmp_path):
    args = ["--variant", "tests.fuzz.variants:polls_twice", "scenarios/bootstrap.toml"]
    done, data, _ = compare(tmp_path, *args, "--max-cost-growth", "1.1")
    assert done.exit_code == 1 and data["regressed"] == []
    assert data["cost_grew"] == ["bootstrap", "all scenarios"]
    [s] = data["scenarios"]
    assert s["flipped"] == [] and s["request_growth"] > 1.1
    assert "GET /graphs/:gid/pull" in data["routes_grew"]
    pull = next(r for r in data["routes"] if r["route"] == "GET /graphs/:gid/pull")
    assert pull["change"] > pull["base"] and pull["ratio"] > 1.1
    assert "| GET /graphs/:gid/pull |" in (tmp_path / "cmp" / "compare.md").read_text()
    done, data, _ = compare(tmp_path, *args, "--max-cost-growth", "3")
    assert done.exit_code == 0 and data["cost_grew"] == []


def test_compare_fuzzes_each_version_with_the_same_seed(tmp_path):
    done, data, _ = compare(
        tmp_path, "--variant", "honest", "scenarios/bootstrap.toml", "--time", "3", "--seed", "2"
    )
    assert done.exit_code == 0, done.output
    assert data["fuzz"]["base"]["examples"] >= 1 and data["fuzz"]["change"]["examples"] >= 1
    assert data["fuzz"]["base"]["finding"] is None
    assert data["fuzz"]["change"]["release"] == []


def test_compare_rollout_fuzzes_the_change_as_a_release_from_the_base(tmp_path):
    args = ["--variant", "newer-client", "scenarios/bootstrap.toml", "--time", "3", "--rollout"]
    done, data, out = compare(tmp_path, *args)
    assert done.exit_code == 0, done.output
    assert data["fuzz"]["change"]["release"] == ["rollout"]
    assert data["fuzz"]["base"]["release"] == []
    assert "change (rolled out from the base)" in (out / "compare.md").read_text()


def test_compare_without_a_change_or_a_folder_or_with_a_bad_one_is_a_usage_error(tmp_path):
    runner = CliRunner()
    for args, says in (
        (["compare", "--report", str(tmp_path)], "--variant"),
        (["compare", "--variant", "honest"], "--report"),
        (["compare", "--variant", "nope", "--report", str(tmp_path)], "--variant nope"),
        (["compare", "--variant", "honest", "--base", "x:y", "--report", str(tmp_path)], "--base"),
    ):
        done = runner.invoke(main, args)
        assert done.exit_code == 2 and says in done.output, done.output


SAME = """
from simkit.client import Device
from simkit.sim.variant import Variant


class Unused(Device):
    def pairing_code(self):  # no world calls it: a human reads it off the screen
        return "0" * 12


renamed = Variant("renamed", "the protocol as specified, under another name")
unused = Variant("unused", "shows another pairing code", device=Unused)
"""


def test_a_version_label_alone_is_no_first_difference(tmp_path):
    """In a release scenario the trace names each party's version: under another name
    for the same protocol, that is the only thing that differs, and it is no difference."""
    (tmp_path / "same.py").write_text(SAME, encoding="utf-8")
    scenario = "scenarios/release-relay-without-epoch.toml"
    done, data, _ = compare(tmp_path, "--variant", f"{tmp_path}/same.py:renamed", scenario)
    [s] = data["scenarios"]
    assert s["divergence"] is None and s["flipped"] == [], s["divergence"]
    assert done.exit_code == 3  # nothing of it differs from the protocol as specified


def test_a_change_that_never_ran_gives_no_verdict_and_exits_3(tmp_path):
    (tmp_path / "same.py").write_text(SAME, encoding="utf-8")
    done, data, _ = compare(
        tmp_path, "--variant", f"{tmp_path}/same.py:unused", "scenarios/bootstrap.toml"
    )
    assert done.exit_code == 3, done.output
    assert data["verdict"] == "no verdict: the change was never exercised"
    assert data["change_ran"]["calls"] == {} and data["change_ran"]["exercised"] is False
    assert "no verdict: the change was never exercised" in done.output


def test_compare_without_fuzzing_says_the_scenarios_alone_judged_and_writes_no_empty_table(
    tmp_path,
):
    done, data, out = compare(tmp_path, "--variant", "honest", "scenarios/bootstrap.toml")
    assert done.exit_code == 0, done.output
    assert "no fuzzing (--time 0): the scenarios alone judge the change" in done.output
    assert data["fuzz"] == {"base": None, "change": None}
    for page in ("compare.md", "compare.html"):
        text = (out / page).read_text()
        assert "Not run (--time 0): this comparison judged the change on the scenarios only" in text
        assert "not run" not in text  # no table of rows that say nothing ran
    md = (out / "compare.md").read_text().splitlines()
    for i, line in enumerate(md):  # a table header is followed by at least one row
        if line.startswith("|---"):
            assert md[i + 1].startswith("| "), md[i - 1]
    assert "No scenario ran differently under the change" in "\n".join(md)


def test_compare_fuzzes_each_side_for_a_minute_unless_told_otherwise():
    from simkit.cli.reviewing import FUZZ_S

    done = CliRunner().invoke(main, ["compare", "--help"])
    assert FUZZ_S == 60 and "[default: 60.0;" in " ".join(done.output.split())


def test_compare_check_runs_every_short_history_on_each_version_and_names_the_change(tmp_path):
    args = ["--variant", "tests.fuzz.variants:log_loser", "scenarios/bootstrap.toml"]
    done, data, out = compare(tmp_path, *args, "--check", "1")
    assert done.exit_code == 1, done.output
    base, change = data["check"]["base"], data["check"]["change"]
    assert base["completed"] == 1 and base["finding"] is None
    assert change["finding"]["attribution"]["verdict"] == "caused by the change"
    assert change["finding"]["steps"][0]["rule"] == "concurrent"
    assert any(r.startswith("check: caused by the change") for r in data["regressed"])
    assert (out / "finding-check-change.json").exists()
    assert "change: check to depth 1" in (out / "compare.md").read_text()
