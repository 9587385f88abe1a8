"""render_report on real worlds: the files, what each must show, and that they are
a pure function of the trace and the summary."""

import json
import os
import re
import subprocess
import sys

import pytest

from simkit.report import FILES, ReportError, load_summary, render_report

from .conftest import summary


@pytest.fixture(scope="module")
def alarm_report(alarm_trace, tmp_path_factory):
    return render_report(alarm_trace, summary("withhold"), tmp_path_factory.mktemp("alarm"))


@pytest.fixture(scope="module")
def clean_report(clean_trace, tmp_path_factory):
    return render_report(clean_trace, summary("clean"), tmp_path_factory.mktemp("clean"))


def mermaid_block(markdown: str) -> str:
    return re.search(r"```mermaid\n(.*?)\n```", markdown, re.S).group(1)


def svg(html: str, ident: str) -> str:
    return re.search(rf'<svg id="{ident}".*?</svg>', html, re.S).group(0)


def test_every_file_is_written_and_returned_by_name(alarm_report, alarm_trace, tmp_path):
    assert sorted(alarm_report) == sorted(FILES)
    assert all(path.is_file() and path.stat().st_size for path in alarm_report.values())
    alarm_trace.dump(tmp_path / "dump.jsonl")
    assert alarm_report["trace.jsonl"].read_bytes() == (tmp_path / "dump.jsonl").read_bytes()
    assert load_summary(alarm_report["summary.json"].parent) == summary("withhold")


def test_markdown_has_the_summary_table_the_diagram_and_the_timeline(alarm_report):
    md = alarm_report["report.md"].read_text()
    assert md.startswith("# simkit report: withhold\n")
    assert "| ✓ pass | b1 raises log.alarm | at 60 s |" in md
    assert "| ✓ pass | alarm-soundness | none |" in md
    diagram = mermaid_block(md)
    assert diagram.startswith("sequenceDiagram\n    participant relay\n")
    assert "    participant b1" in diagram
    assert re.search(r"b1->>relay: \[\d+\.\d{3}\] GET /graphs/", diagram)
    assert re.search(r"relay-->>b1: \[\d+\.\d{3}\] 200, \d+ bytes", diagram)
    at = re.search(r"Centred on the first log.alarm \(b1\) at (\d+\.\d{3}) s", md).group(1)
    assert 60 < float(at) < 61  # within a second of the adversary switching on
    alarm = diagram.index(f"Note over b1: [{at}] alarm: log.alarm b1")
    assert diagram[:alarm].rstrip().endswith("rect rgb(255, 224, 224)")  # highlighted
    timeline = md[md.index("## Timeline") :]
    for row in (
        "| 30.000 | fault | Partition | schedule | devices=a2 until=90 |",
        "| 60.000 | adversary | Adversary | schedule | mode=withhold params=log:lists targets=b1 |",
        f"| {at} | alarm | log.alarm | b1 | graph=g:team reason=",
        "| 90.000 | fault | heal | network | devices=a2 |",
    ):
        assert row in timeline


PLOTS = (
    "plot-lag-1", "plot-lag-2", "plot-convergence", "plot-latency", "plot-availability",
    "plot-rejected", "plot-alarms", "plot-requests",
)  # fmt: skip


def test_html_has_the_plots_the_diagram_the_history_and_fetches_nothing(alarm_report):
    html = alarm_report["report.html"].read_text()
    for ident in PLOTS:
        assert re.search(r"^<svg [^>]*>\n<title>\w", svg(html, ident))
    assert "http" not in html and "<script" not in html and "<link" not in html
    assert "url(" not in html and "@import" not in html
    lanes = svg(html, "plot-alarms")
    assert re.search(r"<title>60\.\d{3} s b1 log\.alarm: graph=g:team reason=", lanes)
    assert "a2 partitioned: 30.0-90.0 s" in lanes
    assert "adversary: withhold" in lanes
    lag = svg(html, "plot-lag-1")
    assert lag.count("<polyline") == 3  # a1, a2, b1 follow g:team
    convergence = svg(html, "plot-convergence")
    assert "last fault ends: 90.0 s" in convergence
    converged = re.search(r"lag 0 for good: (\d+\.\d) s", convergence).group(1)
    assert 90 <= float(converged) <= 140  # after the heal, once writes stop at 120 s
    assert "No record was rejected." in svg(html, "plot-rejected")
    assert "<td>log.alarm</td>" in html[html.index('<h2 id="timeline">') :]
    sequence = re.search(r'<svg id="sequence".*?</svg>', html, re.S).group(0)
    assert "Centred on the first log.alarm (b1)" in sequence
    assert re.search(r"<title>trace#\d+ b1: \[60\.\d{3}\] alarm: log\.alarm b1", sequence)
    history = html[html.index('<h2 id="per-operation-history">') :]
    assert len(re.findall(r'<tr id="op-\d+">', history)) > 20
    assert "acknowledged by the relay (median" in history


def test_the_latency_plot_has_each_write_and_availability_shows_the_partition(alarm_report):
    html = alarm_report["report.html"].read_text()
    acked = re.findall(r"acknowledged after (\d+\.\d+) s", svg(html, "plot-latency"))
    assert len(acked) > 20
    assert max(float(s) for s in acked) > 5  # a2's writes wait out the partition (30-90 s)
    a2 = re.search(r"<title>a2: [^<]*</title>", svg(html, "plot-availability")).group(0)
    assert re.search(r"40 s 0% of \d+", a2)  # partitioned: nothing answered


def test_perfetto_has_one_track_per_device_and_slices_that_end(alarm_report):
    data = json.loads(alarm_report["trace.perfetto.json"].read_text())
    events = data["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert sorted(names.values()) == sorted(set(names.values()))
    for device in ("a1", "a2", "b1"):
        assert device in names.values()
    assert {"relay", "network", "schedule"} <= set(names.values())
    slices = [e for e in events if e["ph"] == "X" and e["cat"] == "exchange"]
    assert slices and all(e["dur"] >= 0 and e["tid"] in names for e in slices)
    assert {names[e["tid"]].split(" ")[0] for e in slices} == {"a1", "a2", "b1"}
    timeouts = [e for e in slices if e["args"]["outcome"] == "timeout"]
    assert timeouts and all(names[e["tid"]].startswith("a2") for e in timeouts)
    assert all(e["dur"] == 10_000_000 for e in timeouts)  # the network's 10 s deadline
    instants = {e["name"] for e in events if e["ph"] == "i"}
    assert {"log.alarm", "Partition", "Adversary", "partition", "heal"} <= instants
    assert any(e["ph"] == "C" and e["name"] == "cursor lag g:team" for e in events)


def test_perfetto_draws_outages_as_spans_and_flows_request_response_and_delivery(alarm_report):
    events = json.loads(alarm_report["trace.perfetto.json"].read_text())["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    spans = {
        (names[e["tid"]], e["name"], e["ts"], e["dur"])
        for e in events
        if e["ph"] == "X" and e["cat"] == "fault"
    }
    assert ("a2 faults", "partitioned", 30_000_000, 60_000_000) in spans
    assert any(track == "b1 faults" and kind == "adversary: withhold" for track, kind, *_ in spans)
    starts = {(e["name"], e["id"]): e for e in events if e["ph"] == "s"}
    ends = [e for e in events if e["ph"] == "f"]
    assert {e["name"] for e in ends} == {"request", "response", "delivered"}
    for end in ends:  # every arrow has a start, earlier or at once, and lands in a slice
        start = starts[end["name"], end["id"]]
        assert end["bp"] == "e" and end["ts"] >= start["ts"]
    relay = next(tid for tid, name in names.items() if name == "relay")
    assert all(e["tid"] == relay for e in ends if e["name"] == "request")
    delivered = [e for e in ends if e["name"] == "delivered"]
    assert all(
        names[e["tid"]] != names[starts["delivered", e["id"]]["tid"]] for e in delivered
    )  # from the writer's push to another device's pull


def test_a_clean_run_shows_a_sampled_window(clean_report):
    md = clean_report["report.md"].read_text()
    assert "Centred on the middle of the run" in md
    diagram = mermaid_block(md)
    assert "alarm" not in diagram and "rect " not in diagram
    assert "participant a1" in diagram and "participant b1" in diagram
    assert diagram.count("->>relay") == 16  # 12 exchanges before the focus, 4 from it
    html = clean_report["report.html"].read_text()
    assert 'id="plot-alarms"' in html and 'id="plot-lag-1"' in html


def test_a_saved_report_renders_again_to_the_same_bytes(alarm_report, tmp_path):
    folder = alarm_report["report.md"].parent
    again = render_report(folder / "trace.jsonl", load_summary(folder), tmp_path)
    for name in FILES:
        assert again[name].read_bytes() == alarm_report[name].read_bytes(), name
    in_place = render_report(folder / "trace.jsonl", load_summary(folder), folder)
    assert all(in_place[n].read_bytes() == again[n].read_bytes() for n in FILES)


def test_another_process_with_another_hash_seed_writes_the_same_bytes(alarm_report, tmp_path):
    folder = alarm_report["report.md"].parent
    code = (
        "import sys; from simkit.report import render_report, load_summary; "
        "render_report(sys.argv[1] + '/trace.jsonl', load_summary(sys.argv[1]), sys.argv[2])"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", code, str(folder), str(tmp_path)], check=True, env=env)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == alarm_report[name].read_bytes(), name


def test_a_bad_summary_or_folder_is_refused_by_name(alarm_trace, tmp_path):
    broken = {**summary("x"), "seed": "one"}
    with pytest.raises(ReportError, match="'seed' must be int"):
        render_report(alarm_trace, broken, tmp_path)
    broken = summary("x")
    del broken["invariants"][0]["violations"]
    with pytest.raises(ReportError, match=r"invariants\[0\]: missing key 'violations'"):
        render_report(alarm_trace, broken, tmp_path)
    with pytest.raises(ReportError, match="cannot read the saved summary"):
        load_summary(tmp_path / "nowhere")
    with pytest.raises(ReportError, match="cannot read the trace"):
        render_report(tmp_path / "nowhere.jsonl", summary("x"), tmp_path)


def test_a_scenario_report_shows_the_behaviours_its_run_reached(tmp_path):
    from pathlib import Path

    from simkit.scenario.load import load_scenario
    from simkit.scenario.run import run_scenario

    root = Path(__file__).resolve().parents[2]
    result = run_scenario(load_scenario(root / "scenarios" / "bootstrap.toml"))
    summary = result.summary()
    behaviours = summary["behaviours"]
    assert behaviours["reached"] == len(result.world.coverage.reached) > 0
    assert behaviours["counts"]["ceremony Bootstrap"] >= 1
    render_report(result.world.trace, summary, tmp_path)
    for name in ("report.md", "report.html"):
        text = (tmp_path / name).read_text()
        assert "Behaviours reached" in text and "ceremony Bootstrap" in text
        assert f"{behaviours['reached']} of the catalogue" in text
