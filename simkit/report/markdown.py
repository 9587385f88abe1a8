"""report.md: the report as GitHub-flavoured Markdown with a Mermaid diagram, for
reading on a code-hosting site without opening anything else."""

import re

import attrs

from simkit.report.data import WINDOW_AFTER, WINDOW_BEFORE, Story
from simkit.report.history import centred_on_cause, evidence, latencies, operations
from simkit.report.mermaid import sequence_diagram
from simkit.report.tables import (
    Table,
    behaviours_table,
    evidence_table,
    history_table,
    story_sentences,
    summary_tables,
    timeline_table,
    title,
    violation_lists,
    violation_sentences,
)

_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")
FILES_NOTE = [
    "- `report.html`: this summary with the sequence diagram, plots of lag, convergence, "
    "write latency, availability, rejections and alarms, and the whole per-operation history.",
    "- `trace.jsonl`: the full trace, one event per line.",
    "- `trace.perfetto.json`: the trace for Perfetto or chrome://tracing.",
    "- `summary.json`: the run summary; `simkit report` re-renders this folder from it.",
]


def md(value: object) -> str:
    """A table cell or inline text: one line, Markdown and HTML characters escaped."""
    return _SPECIAL.sub(r"\\\1", " ".join(str(value).split()))


def table(t: Table, level: int = 2) -> list[str]:
    lines = [f"{'#' * level} {t.heading}", ""] if t.heading else []
    lines += [md(t.note), ""] if t.note else []
    if not t.rows:
        return [*lines, md(t.empty), ""]
    lines += ["| " + " | ".join(t.header) + " |", "|" + "---|" * len(t.header)]
    lines += ["| " + " | ".join(md(cell) for cell in row) + " |" for row in t.rows]
    return [*lines, ""]


def window_sentence(story: Story) -> str:
    f = story.focus
    if not story.cited:
        also = ""
    elif f.kind == "violation":
        also = f" Also drawn: the {len(story.cited)} events of the violation's evidence."
    else:
        also = (
            f" Also drawn: {len(story.cited)} moments of the run (its ceremonies, faults, "
            "crashes, alarms, first rejections and how it ended)."
        )
    gaps = " A note marks each stretch left out." if also else ""
    return (
        f"Centred on {f.text} at {f.t:.3f} s: the {WINDOW_BEFORE} exchanges before it "
        f"and the {WINDOW_AFTER} from it on.{also}{gaps} Times in brackets are virtual "
        "seconds; faults, crashes, alarms and rejections are notes."
    )


def markdown(story: Story, summary: dict) -> str:
    lines = [f"# {md(title(summary))}", ""]
    if summary["description"]:
        lines += [md(summary["description"]), ""]
    ops = operations(story)
    violation = summary.get("violation")
    if violation:  # the first screen tells what broke, why, whose, then the rest
        found = evidence(story, ops, violation)
        story = centred_on_cause(story, found)
        what, *rest = violation_sentences(summary)
        lines += ["## What broke", "", f"**{md(what)}**", ""]
        lines += [f"**{md(label)}:** {md(text)}" for label, text in story_sentences(summary)]
        lines += [""] if story_sentences(summary) else []
        lines += [line for sentence in rest for line in (md(sentence), "")]
        lines += table(evidence_table(found), level=3)
    for t in summary_tables(story, summary):
        lines += table(t)
    for name, found in violation_lists(summary):
        lines += [f"<details><summary>{md(name)}: violations</summary>", ""]
        lines += [f"- {md(v)}" for v in found]
        lines += ["", "</details>", ""]
    history = history_table(story, ops, latencies(ops), violation)
    named = [row for i, row in enumerate(history.rows) if i in history.marked]
    lines += ["## Per-operation history", "", md(history.note), ""]
    if named:
        lines += table(attrs.evolve(history, heading="", note="", rows=named))
    lines += ["The whole history, one row per write, is in report.html.", ""]
    lines += ["## Sequence", "", md(window_sentence(story)), ""]
    lines += ["```mermaid", sequence_diagram(story), "```", ""]
    lines += table(timeline_table(story))
    reached = behaviours_table(summary)
    if reached is not None:
        lines += table(reached)
    lines += ["## Files", "", *FILES_NOTE, ""]
    return "\n".join(lines)
