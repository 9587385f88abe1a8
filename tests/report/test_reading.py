"""What a report reads from a trace, on hand-written traces with the corner cases:
exchanges that never end, overlapping exchanges, the focus, convergence, spans,
and text that would break Mermaid or Markdown."""

import json
import re

import attrs

from simkit.report import render_report
from simkit.report.data import ConvergenceTimes, Span, read, worst_lag
from simkit.report.markdown import window_sentence
from simkit.report.mermaid import sequence_diagram
from simkit.report.sequence import rows

from .conftest import Builder, summary


def test_an_exchange_ends_at_its_response_its_timeout_or_not_at_all():
    b = Builder()
    b.at(0).emit("request", "a1", method="GET", path="/p", size=0, xid=0)
    b.at(0.01).emit("fault", "network", fault="request-lost", device="a1", xid=0)
    b.at(10).emit("fault", "a1", fault="timeout", xid=0)
    b.exchange("a1", 1, 11, 11.5)
    b.at(12).emit("request", "a1", method="PUT", path="/q", size=3, xid=2)
    b.at(12.5).emit("crash", "a1", what="device-crash")
    story = read(b.trace, summary("t"))
    assert [(x.xid, x.outcome, x.end) for x in story.exchanges] == [
        (0, "timeout", 10),
        (1, "200", 11.5),
        (2, "unanswered", None),
    ]
    assert story.exchanges[0].faults == ("request-lost", "timeout")
    assert story.spans == (Span("a1", 12.5, 12.5, "down"),)


def test_overlapping_exchanges_of_a_device_go_on_an_extra_track(tmp_path):
    b = Builder()
    b.at(0).emit("request", "a1", method="POST", path="/blob", size=9, xid=0)
    b.exchange("a1", 1, 1, 2)
    b.at(5).emit("response", "a1", status=200, size=2, xid=0)
    b.exchange("a1", 2, 6, 7)
    paths = render_report(b.trace, summary("t"), tmp_path)
    events = json.loads(paths["trace.perfetto.json"].read_text())["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    slices = {
        e["args"]["xid"]: (tracks[e["tid"]], e["ts"], e["dur"]) for e in events if e["ph"] == "X"
    }
    assert slices == {
        0: ("a1", 0, 5_000_000),
        1: ("a1 (2)", 1_000_000, 1_000_000),
        2: ("a1", 6_000_000, 1_000_000),
    }
    assert list(tracks.values()) == ["a1", "a1 (2)"]


def alarm_at_4() -> Builder:
    b = Builder()
    for xid in range(2):
        b.exchange("b1", xid, xid, xid + 0.5)
    return b.at(3).emit("event", "b1", name="log.alarm", graph="g", reason="gap")


def test_the_focus_is_the_first_violation_naming_a_trace_position_else_the_first_alarm():
    b = alarm_at_4()
    violations = ("[x] late (trace#9999)", "[x] early (trace#1)", "[x] nowhere")
    story = read(b.trace, summary("t", passed=False, violations=violations))
    assert (story.focus.seq, story.focus.kind) == (1, "violation")
    assert story.focus.violation == "[x] early (trace#1)"
    story = read(b.trace, summary("t", passed=False, violations=("[x] late (trace#9999)",)))
    assert story.focus.seq == 4  # past the end: the last event
    story = read(b.trace, summary("t", passed=False, violations=("[x] nowhere",)))
    assert (story.focus.seq, story.focus.kind, story.focus.text) == (
        4,
        "alarm",
        "the first log.alarm (b1)",
    )


def test_convergence_is_measured_from_the_last_fault_to_the_first_lag_of_zero_for_good():
    b = Builder()
    b.at(10).emit("fault", "network", fault="partition", devices=["a2"], until=30)
    for t, lag in ((10, 0), (20, 3), (30, 2), (40, 0), (50, 0)):
        b.at(t).emit("check", "world", what="lag", graph="g", seq=9, lags={"a1": 0, "a2": lag})
    b.at(30).emit("fault", "network", fault="heal", devices=["a2"])
    b.at(60).emit("check", "world", what="quiescence", settled=True)
    c = read(b.trace, summary("t")).convergence
    assert c == ConvergenceTimes(faults_end=30, converged=40, settled=60, sampled=True)
    assert c.sentence().startswith("Converged 10.0 s after the last fault ended at 30.0 s")
    b.at(70).emit("check", "world", what="lag", graph="g", seq=9, lags={"a1": 1})
    assert read(b.trace, summary("t")).convergence.converged is None


def test_spans_cover_outages_error_windows_and_adversary_modes_until_the_end():
    b = Builder()
    b.at(1).emit("fault", "schedule", name="Adversary", mode="fork", targets=["b1"], at=1)
    b.at(2).emit("crash", "relay", what="crash", until=None)
    b.emit("crash", "relay", what="relay-crash")
    b.at(4).emit("crash", "relay", what="relay-restart")
    b.at(5).emit("fault", "network", fault="error-window", status=503, until=8)
    b.at(6).emit("fault", "network", fault="error-window", status=503, until=6)  # zero: none
    b.at(9).emit("event", "b1", name="sync.done", graph="g")
    assert read(b.trace, summary("t")).spans == (
        Span("b1", 1, 9, "adversary: fork"),
        Span("relay", 2, 4, "down"),
        Span("relay", 5, 8, "error window"),
    )
    timeline = [(m.category, m.what) for m in read(b.trace, summary("t")).timeline]
    assert timeline == [
        ("adversary", "Adversary"),
        ("crash", "relay-crash"),
        ("crash", "relay-restart"),
    ]


def test_text_that_would_break_mermaid_or_markdown_is_escaped(tmp_path):
    b = Builder()
    b.exchange("end", 0, 0, 1)
    b.exchange("9-z", 0, 1, 2)
    b.at(3).emit("event", "end", name="log.alarm", graph="g", reason="bad #1; <b>|x|</b> & %%")
    diagram = sequence_diagram(read(b.trace, summary("t")))
    assert "participant p_end as end" in diagram and "participant p_9_z as 9-z" in diagram
    assert "p_end->>relay: [0.000] GET /graphs/g/pull" in diagram
    assert "reason=bad #35;1#59;" in diagram and "#60;b#62;|x|#60;/b#62; #38; #37;#37;" in diagram
    for line in diagram.splitlines():
        said = line.partition(": ")[2]
        assert not set(re.sub(r"#\d+;|<br/>", "", said)) & set("#;<>&%{}"), line
    weird = summary("a|b")
    weird["expectations"][0]["detail"] = "x | y <i>z</i>"
    paths = render_report(b.trace, weird, tmp_path)
    md, html = paths["report.md"].read_text(), paths["report.html"].read_text()
    assert "# simkit report: a\\|b" in md
    assert "| x \\| y \\<i\\>z\\</i\\> |" in md
    assert "<td>x | y &lt;i&gt;z&lt;/i&gt;</td>" in html


def test_an_empty_trace_still_renders_every_file(tmp_path):
    paths = render_report(Builder().trace, summary("empty"), tmp_path)
    assert paths["trace.jsonl"].read_bytes() == b""
    md, html = paths["report.md"].read_text(), paths["report.html"].read_text()
    assert "Centred on an empty trace" in md and "sequenceDiagram\n    participant relay\n```" in md
    assert "No lag samples" in html and 'id="plot-alarms"' in html


def test_an_adversary_counts_as_a_fault_when_it_switches_on_and_off_not_while_it_runs():
    b = Builder()
    b.at(10).emit("fault", "schedule", name="Adversary", mode="fork", targets=["b1"], at=10)
    b.at(20).emit("fault", "adversary", name="switch-off", mode="fork")
    b.at(25).emit("fault", "schedule", name="Adversary", mode="withhold", targets=["b1"], at=25)
    for t in (30, 40):
        b.at(t).emit("check", "world", what="lag", graph="g", seq=1, lags={"b1": 0})
    story = read(b.trace, summary("t"))
    assert story.spans == (
        Span("b1", 10, 20, "adversary: fork"),
        Span("b1", 25, 40, "adversary: withhold"),
    )
    assert (story.convergence.faults_end, story.convergence.converged) == (25, 30)


def test_a_revoked_device_leaves_the_fleet_it_is_no_fault_that_never_ends():
    b = Builder()
    b.at(60).emit("event", "schedule", name="Revoke", by="a1", device="a2", at=60)
    b.at(60.8).emit("crash", "a2", what="device-crash")
    for t, lag in ((70, 2), (80, 0), (90, 0)):
        b.at(t).emit("check", "world", what="lag", graph="g", seq=5, lags={"a1": lag})
    b.at(100).emit("check", "world", what="quiescence", settled=True)
    story = read(b.trace, summary("t"))
    assert story.spans == (Span("a2", 60.8, 100, "revoked"),)
    assert story.convergence == ConvergenceTimes(None, 80, 100, True)
    assert story.convergence.sentence().startswith("No fault was injected; lag was 0 from 80.0 s")
    rows = [(m.category, m.what, m.actor) for m in story.timeline]
    assert ("revoked", "leaves the fleet", "a2") in rows
    assert not any(category == "crash" for category, _, _ in rows)


def test_lag_already_0_when_the_last_fault_ends_is_said_so_not_converged_after_it():
    b = Builder()
    b.at(20).emit("fault", "network", fault="partition", devices=["a2"], until=25)
    b.at(25).emit("fault", "network", fault="heal", devices=["a2"])
    for t in (10, 30, 40):
        b.at(t).emit("check", "world", what="lag", graph="g", seq=5, lags={"a1": 0, "a2": 0})
    c = read(b.trace, summary("t")).convergence
    assert (c.faults_end, c.converged) == (25, 10)
    assert c.sentence().startswith("Every device's lag was already 0 when the last fault ended")


def test_a_negative_lag_is_drawn_inside_the_plot_and_counts_as_not_converged(tmp_path):
    b = Builder()
    for t, lag in ((10, 0), (20, -3), (30, -7), (40, 2)):
        b.at(t).emit("check", "world", what="lag", graph="g", seq=5, lags={"a1": 0, "b1": lag})
    story = read(b.trace, summary("t"))
    assert [lag for _, lag in worst_lag(story.lags)] == [0, -3, -7, 2]
    assert story.convergence.converged is None
    html = render_report(b.trace, summary("t"), tmp_path)["report.html"].read_text()
    plot = re.search(r'<svg id="plot-lag-1".*?</svg>', html, re.S).group(0)
    height = float(re.search(r'viewBox="0 0 \d+ ([\d.]+)"', plot).group(1))
    for points in re.findall(r'<polyline points="([^"]+)"', plot):
        ys = [float(p.split(",")[1]) for p in points.split()]
        assert all(0 <= y <= height for y in ys), ys
    assert "below 0: ahead of the relay" in plot and "a forked history" in plot
    assert re.search(r">-\d+</text>", plot)  # a negative tick on the y axis


def test_setup_ceremonies_are_on_the_timeline_and_empty_fields_are_left_out():
    b = Builder()
    b.at(0.1).emit("event", "relay", name="device.register", device_id="a1", member_id="alice")
    b.at(0.3).emit("event", "relay", name="graph.rotate", graph="g", epoch=1, excluded=[],
                   device_id="a1", member_id="alice")  # fmt: skip
    b.at(1.5).emit("event", "world", name="setup.done")
    b.at(9).emit(
        "fault", "schedule", name="Adversary", mode="fork", targets=["b1"], params={}, at=9
    )
    b.at(20).emit("event", "relay", name="graph.rotate", graph="g", epoch=2, excluded=["a2"],
                  device_id="a1", member_id="alice")  # fmt: skip
    rows = [(m.category, m.what, m.actor, m.detail) for m in read(b.trace, summary("t")).timeline]
    assert rows[:3] == [
        ("setup", "device.register", "a1", "device_id=a1 member_id=alice"),
        ("setup", "graph.rotate", "a1", "device_id=a1 epoch=1 graph=g member_id=alice"),
        ("setup", "setup.done", "world", ""),
    ]
    assert rows[3] == ("adversary", "Adversary", "schedule", "mode=fork targets=b1")
    assert rows[4][:3] == ("ceremony", "graph.rotate", "a1") and "excluded=a2" in rows[4][3]


def _busy(b, device: str, start: float, count: int, first_xid: int) -> None:
    """``count`` routine pull exchanges of ``device``, one a second from ``start``."""
    for i in range(count):
        b.exchange(device, first_xid + i, start + i, start + i + 0.1)


def test_a_clean_runs_diagram_draws_every_ceremony_and_marks_what_it_leaves_out():
    """Issue 30: a clean run's diagram showed the 16 exchanges around its first
    ceremony and missed the rotation that came later."""
    b = Builder()
    b.at(10).emit("event", "schedule", name="Revoke", by="a1", device="a2", at=10)
    _busy(b, "a1", 11, 30, 0)
    b.at(50).emit("event", "relay", name="graph.rotate", device_id="a1", graph="g:team", epoch=2)
    _busy(b, "b1", 51, 3, 100)
    b.at(60).emit("check", "world", what="quiescence", settled=True)
    story = read(b.trace, summary("t"))
    text = [row.text for row in rows(story)]
    assert any("ceremony: Revoke" in t for t in text)
    assert any("ceremony: graph.rotate" in t for t in text)  # outside the window
    assert any(t.startswith("settled: quiescence") for t in text)
    assert "… 26 exchanges over 35.9 s not drawn" in text  # 30, the window drew 4
    assert "ceremonies, faults, crashes, alarms" in window_sentence(story)


def test_a_violations_diagram_draws_each_event_of_its_evidence_with_its_part():
    b = Builder()
    b.at(1).emit("event", "a1", name="app.write", graph="g", recordId="r0", rev=5, op="edit")
    b.at(1.1).emit("request", "a1", method="POST", path="/graphs/g/push", size=9, xid=0)
    b.at(1.2).emit("response", "a1", status=200, size=2, xid=0)
    _busy(b, "b1", 2, 40, 10)
    b.at(60).emit("event", "b1", name="record.applied", graph="g", recordId="r0", rev=5, seq=1)
    story = read(b.trace, summary("t", passed=False))
    story = attrs.evolve(
        story, cited=((0, "the write of r0 by a1"), (1, "the push that carried it"))
    )
    text = [row.text for row in rows(story)]
    assert any(t.startswith("the write of r0 by a1: app.write") for t in text)
    assert "the push that carried it: POST /graphs/g/push" in text and "200, 2 bytes" in text
    assert any(t.startswith("… ") and t.endswith("not drawn") for t in text)
