"""``simkit campaign`` end to end: its embedded LocalCluster and an existing
scheduler, the exit codes, the JSON and the dashboard with its reproducer links."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from simkit.cli import main

CRASH = "tests.fuzz.crash_variants:a1_loop_raises"


def campaign(*args: str):
    return CliRunner().invoke(main, ["campaign", "--time", "600", *args])


def test_a_campaign_that_finds_nothing_exits_0_and_says_what_ran(tmp_path):
    result = campaign(
        "--workers", "1", "--chunks", "1", "--max-steps", "4", "--known", str(tmp_path / "k"),
        "--json", str(tmp_path / "c.json"), "--report", str(tmp_path / "report"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "no violation" in result.output and "behaviours reached" in result.output
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["verdict"] == "no violation" and data["chunks"] == 1 and data["examples"] == 10
    assert data["targets"] == [
        {
            "target": "honest",
            "chunks": 1,
            "examples": 10,
            "steps": data["steps"],
            "findings": 0,
            "exercised": None,
            "change": [],
        }
    ]
    page = (tmp_path / "report" / "index.html").read_text()
    for part in ('id="plot-throughput"', 'id="plot-behaviours"', "never reached", "What ran"):
        assert part in page


def test_a_campaign_of_a_change_that_never_ran_exits_3_and_says_so(client, tmp_path):
    result = campaign(
        "--scheduler", client.scheduler.address, "--variant", "tests.fuzz.variants:unused",
        "--chunks", "1", "--max-steps", "4", "--known", str(tmp_path / "k"),
        "--json", str(tmp_path / "c.json"), "--report", str(tmp_path / "report"),
    )  # fmt: skip
    never = "no verdict: the change was never exercised"
    assert result.exit_code == 3, result.output
    assert never in result.output and "overridden methods ran: none" in result.output
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["verdict"] == never
    assert data["change"]["tests.fuzz.variants:unused"]["exercised"] is False
    assert never in (tmp_path / "report" / "index.html").read_text()


def test_a_finding_exits_1_with_a_dashboard_linking_its_reproducer(client, tmp_path):
    """a1_loop_raises crashes every example: both chunks find it at once."""
    report = tmp_path / "report"
    result = campaign(
        "--scheduler", client.scheduler.address, "--variant", CRASH,
        "--chunks", "2", "--stop-on-failure", "--shrink-time", "2", "--known", str(tmp_path / "k"),
        "--report", str(report),
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "FINDING crash" in result.output and "replay with: simkit replay" in result.output
    (finding,) = json.loads((report / "campaign.json").read_text())["findings"]
    assert f'href="{finding["reproducer_file"]}"' in (report / "index.html").read_text()
    assert finding["replay_report"] == "none: the replay raised KeyError"
    replayed = CliRunner().invoke(main, ["replay", str(report / finding["reproducer_file"])])
    assert replayed.exit_code == 1 and "internal error: KeyError" in replayed.output


def test_mutation_analysis_scores_the_mutants_and_exits_1_while_one_survives(client, tmp_path):
    """Each mutant gets --time seconds; the killer breaks in the first example, which
    starts whatever the budget (the budget is checked as each example starts)."""
    result = CliRunner().invoke(
        main,
        ["campaign", "--time", "3", "--scheduler", client.scheduler.address, "--mutants",
         "tests.campaign.variants:SOURCE", "--json", str(tmp_path / "m.json")],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "mutation score: 1/2 killed" in result.output
    assert "killed   graph-key-sent-unwrapped  by epochs" in result.output
    assert "survived docstring-only" in result.output
    data = json.loads((tmp_path / "m.json").read_text())
    assert data["verdict"] == "1/2 mutants killed" and data["budget"]["chunk_examples"] is None


def test_ctrl_c_to_the_process_group_stops_the_chunks_and_reports_what_ran(tmp_path):
    """As a terminal does: SIGINT to the campaign and its cluster's processes at once,
    sent once the first chunk is running (the status line says so). Short examples:
    a chunk stops at its next example."""
    root = Path(__file__).parents[2]
    out = tmp_path / "c.json"
    args = ["campaign", "--workers", "1", "--time", "600", "--max-steps", "2",
            "--known", str(tmp_path / "k"), "--json", str(out)]  # fmt: skip
    with subprocess.Popen(
        [sys.executable, "-m", "simkit.cli", *args], cwd=root, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as campaign_process:  # fmt: skip
        seen = ""
        while "1 running" not in seen:
            seen += campaign_process.stderr.read(1) or pytest.fail(f"ended early: {seen}")
        os.killpg(campaign_process.pid, signal.SIGINT)
        stdout, _ = campaign_process.communicate(timeout=240)
    assert campaign_process.returncode == 130, stdout
    assert "interrupted (Ctrl-C)" in stdout
    data = json.loads(out.read_text())
    # the chunk running at Ctrl-C stops at its next example, unless that example was
    # the last of its budget (ten examples of two steps: a race CI has lost once)
    assert data["interrupted"] and data["outcomes"][-1]["ended"] in ("stopped", "examples")
    # of a 600 s budget: it stopped at once, with the chunk it was running (and at most
    # one that ended just before)
    assert data["stopped"] == "Ctrl-C" and data["chunks"] <= 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "--workers and --scheduler"),
        (["--mutants", "m:X", "--variant", "v:x"], "--mutants and --variant"),
        (["--variant", "no_such_module:x"], "no module no_such_module"),
        (["--mutants", "tests.campaign.variants:missing"], "not a list of mutants"),
        (["--shrink-time", "0"], "--shrink-time"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args, message):
    result = campaign(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
