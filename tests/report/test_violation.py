"""A failing run's report explains the violation: the invariant, where it broke, the
trace events behind it (linked), the sequence diagram centred on its cause, the
per-operation history with the implicated writes marked, and every invariant that
did not run marked "not checked". Also the replay of a reproducer as a report."""

import json
import re
from pathlib import Path

from click.testing import CliRunner

from simkit.cli import main
from simkit.fuzz.params import WorldParams
from simkit.fuzz.reproducer import Reproducer
from simkit.report import render_report

REPRODUCER = Path(__file__).with_name("data") / "keep-last-equal.json"


def test_a_failing_run_explains_its_violation_with_linked_evidence(failing_run, tmp_path):
    trace, summary = failing_run
    html = render_report(trace, summary, tmp_path)["report.html"].read_text()
    section = re.search(r'<section class="violation" id="violation">.*?</section>', html, re.S)
    section = section.group(0)
    seen = summary["violation"]["trace_seq"]
    # the device model sees b2 apply a revoked device's write the moment it does
    assert "[device-model] client rule 2: b2 applied" in section
    assert "revoked-device: &#x27;a2&#x27; was revoked" in section
    assert f'<a href="#ev-{seen}">trace#{seen}</a>' in section
    roles = re.findall(r'<tr id="ev-\d+"><td>#\d+</td><td>[\d.]+</td><td>([^<]+)</td>', section)
    assert roles[0].startswith("the write of r") and roles[-1] == "where the violation was seen"
    assert {"the push that carried it", "the relay accepted it", "b2&#x27;s decision"} <= set(roles)
    record = summary["violation"]["records"][0]
    marked = re.findall(r'<tr id="op-\d+" class="marked">(.*?)</tr>', html)
    assert marked and all(f"<td>{record}</td>" in row for row in marked)
    assert re.search(r"Centred on b2&#x27;s decision \(record\.applied\), behind the first", html)


def test_invariants_that_did_not_run_say_not_checked_and_why(failing_run, tmp_path):
    trace, summary = failing_run
    paths = render_report(trace, summary, tmp_path)
    html, md = paths["report.html"].read_text(), paths["report.md"].read_text()
    assert '<td class="unchecked">– not checked</td><td>convergence</td>' in html
    assert (
        "| – not checked | convergence | applies only with an honest relay and no thief; "
        "this run had a malicious relay or a stolen device |"
    ) in md
    assert "| ✗ FAIL | revocation |" in md and "| ✗ FAIL | device-model |" in md
    assert "## What broke" in md and "### Evidence" in md
    assert md.index("## What broke") < md.index("## Invariants")  # the first screen
    checked = sum(inv["passed"] is not None for inv in summary["invariants"])
    assert f"{checked} of {len(summary['invariants'])} invariants were checked" in md


def test_replay_report_renders_a_reproducer_with_the_step_it_broke_after(tmp_path):
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["replay", str(REPRODUCER), "--report", str(out)])
    assert result.exit_code == 1, result.output
    assert "violated after step 1" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["variant"] == "tests.fuzz.variants:keep_last_equal"
    # both lww and the relay's model check catch a relay keeping the last of equal revs
    assert summary["violation"]["step"] == 1
    assert summary["violation"]["invariant"] in ("lww", "relay-model")
    by_name = {inv["name"]: inv for inv in summary["invariants"]}
    assert by_name["lww"]["passed"] is False and by_name["relay-model"]["passed"] is False
    assert by_name["convergence"]["passed"] is None  # it runs only at quiescence
    assert by_name["convergence"]["note"] == "runs only at quiescence; the run stopped after step 1"
    assert by_name["epochs"]["note"] == "held until the run stopped after step 1"
    md = (out / "report.md").read_text()
    assert '**Where:** the run broke after step 1: {"rule": "link"' in md
    assert "the write of r0 by a1" in md and "the write of r0 by b2" in md
    assert by_name["alarm-soundness"]["note"] == "held until the run stopped after step 1"


def test_simkit_report_renders_a_trace_without_its_summary_claiming_nothing_more(
    failing_run, tmp_path
):
    trace, summary = failing_run
    saved = render_report(trace, summary, tmp_path / "saved")
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "trace.jsonl").write_bytes(saved["trace.jsonl"].read_bytes())
    result = CliRunner().invoke(main, ["report", str(alone / "trace.jsonl"), "--out", str(alone)])
    assert result.exit_code == 0, result.output
    assert "no summary.json beside the trace" in result.output
    again = json.loads((alone / "summary.json").read_text())
    assert again["passed"] is False and again["seed"] is None and again["expectations"] == []
    assert [inv["name"] for inv in again["invariants"]] == ["device-model", "revocation"]
    assert again["trace_hash"] == summary["trace_hash"]
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "trace.jsonl").write_bytes(b"")
    CliRunner().invoke(main, ["report", str(clean / "trace.jsonl"), "--out", str(clean)])
    md = (clean / "report.md").read_text()
    assert "| Result | not judged: no summary.json, only what the trace records |" in md


def test_simkit_help_shows_each_command_summary_whole():
    text = CliRunner().invoke(main, ["--help"], terminal_width=80).output
    commands = text[text.index("Commands:") :]
    assert "..." not in commands
    flat = " ".join(text.split())
    assert "Print every byte-exact construction computed on fixed inputs (JSON)." in flat
    assert "Run one scenario or a folder of them; exit 0 when every expectation and" in flat


def test_a_forgery_in_a_pairwise_graph_names_the_forged_write_and_its_push(tmp_path):
    """Evidence starts from the cause in every kind of graph: a device names a pairwise
    graph ``d:bob`` where the violation names its storage key ``d:alice:bob``."""
    steps = [
        {"rule": "forge", "device": "a1", "graph": "d:alice:bob", "record": "r1", "how": "author"},
        {"rule": "advance", "seconds": 30},
    ]
    repro = Reproducer(
        "honest", WorldParams(5), tuple(steps),
        variant="tests.invariants.test_promises:accepts_forgeries",
    )  # fmt: skip
    path = tmp_path / "forged.json"
    repro.write(path)
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["replay", str(path), "--report", str(out)])
    assert result.exit_code == 1, result.output
    md = (out / "report.md").read_text()
    assert "the forged write of r1 by a1's non-conforming client" in md, md
    assert "the push that carried it" in md
