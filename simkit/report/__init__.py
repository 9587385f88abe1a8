"""simkit.report: what reviewers read about a run (docs/reports.md).

    paths = render_report(trace_or_path, summary, "out/")
    render_report("out/trace.jsonl", load_summary("out/"), "out/")  # the same bytes again

A report folder holds ``summary.json``, ``trace.jsonl``, ``trace.perfetto.json``,
``report.md`` and ``report.html``. Every file is a pure function of the trace and
the summary: no clock, no hash-ordered iteration.
"""

from pathlib import Path

from simkit.errors import SimkitError
from simkit.report.data import read
from simkit.report.html import html
from simkit.report.markdown import markdown
from simkit.report.perfetto import perfetto_json
from simkit.report.summary import (
    SUMMARY_FILE,
    ReportError,
    check_summary,
    load_summary,
    summary_bytes,
    summary_from_trace,
)
from simkit.sim.trace import Trace

FILES = (SUMMARY_FILE, "trace.jsonl", "trace.perfetto.json", "report.md", "report.html")


def load_trace(trace: Trace | str | Path) -> Trace:
    """A Trace, or the one saved at a path (a JSON Lines dump)."""
    if isinstance(trace, Trace):
        return trace
    try:
        return Trace.load(trace)
    except OSError as exc:
        raise ReportError(f"{trace}: cannot read the trace ({exc.strerror})") from None
    except SimkitError as exc:
        raise ReportError(f"{trace}: not a simkit trace ({exc})") from None


def render_report(trace: Trace | str | Path, summary: dict, out_dir: str | Path) -> dict[str, Path]:
    """Write the report files into ``out_dir`` (created if missing); returns each
    file's path by its name. ``trace`` is a Trace or the path of a JSON Lines dump
    (a run's streamed trace may already be ``out_dir/trace.jsonl``)."""
    summary = check_summary(summary)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in FILES}
    streamed = (
        not isinstance(trace, Trace) and Path(trace).resolve() == paths["trace.jsonl"].resolve()
    )
    trace = load_trace(trace)
    story = read(trace, summary)
    paths[SUMMARY_FILE].write_bytes(summary_bytes(summary))
    if not streamed:  # a run that streamed its trace here already wrote the file
        trace.dump(paths["trace.jsonl"])
    paths["trace.perfetto.json"].write_bytes(perfetto_json(story, f"simkit: {summary['scenario']}"))
    paths["report.md"].write_bytes(markdown(story, summary).encode())
    paths["report.html"].write_bytes(html(story, summary).encode())
    return paths


__all__ = [
    "FILES", "SUMMARY_FILE", "ReportError", "load_summary", "load_trace", "render_report",
    "summary_from_trace",
]  # fmt: skip
