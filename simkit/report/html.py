"""report.html: one standalone page (inline CSS and SVG, nothing fetched) to open from
a report folder offline: the summary, the violation and the trace events behind it,
the sequence diagram around the focus, the plots, the per-operation history and the
timeline. Every ``trace#N`` in the page links to the row that shows event N."""

import re
from html import escape

from simkit.report.data import Story
from simkit.report.history import centred_on_cause, evidence, latencies, operations
from simkit.report.markdown import window_sentence
from simkit.report.plots import figures
from simkit.report.sequence import sequence_svg
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

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #222; margin: 24px auto; max-width: 1000px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; } h3 { font-size: 15px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.fail { color: #b00020; font-weight: bold; } td.pass { color: #006b3c; }
td.unchecked { color: #8a5a00; background: #fff6e0; font-style: italic; }
tr.marked td { background: #ffe8e8; } tr:target td { outline: 2px solid #d55e00; }
section.violation { border-left: 4px solid #b00020; padding: 4px 14px; background: #fff7f7; }
section.violation p.what { font-weight: bold; color: #b00020; }
table.history { font-size: 12px; } table.history td { padding: 1px 5px; white-space: nowrap; }
figure { margin: 12px 0 24px; } figcaption { color: #555; max-width: 900px; }
svg.plot, svg.sequence { background: #fff; border: 1px solid #ddd; }
svg text { font: 12px system-ui, sans-serif; fill: #222; }
svg text.axis-title { font-weight: bold; } svg text.small { font-size: 10px; fill: #444; }
svg text.empty { fill: #777; font-style: italic; }
svg .grid { stroke: #e6e6e6; stroke-width: 1; } svg .axis { stroke: #333; stroke-width: 1; }
.mono { font-family: ui-monospace, monospace; }
"""

_TRACE_REF = re.compile(r"trace#(\d+)")


def page_start(title: str) -> list[str]:
    """A standalone page's opening lines, up to its title heading (the style inline)."""
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
    ]


def verdict_class(cell: str) -> str:
    """A result cell's class, from its mark (pass, held; FAIL, BROKEN; not checked)."""
    return {"✓": "pass", "✗": "fail"}.get(cell[:1], "unchecked")


def linked(text: str, anchors: set[str]) -> str:
    """Escaped text whose ``trace#N`` links to the page's row for event N, if any."""

    def link(match: re.Match) -> str:
        for ident in (f"ev-{match.group(1)}", f"op-{match.group(1)}"):
            if ident in anchors:
                return f'<a href="#{ident}">{match.group(0)}</a>'
        return match.group(0)

    return _TRACE_REF.sub(link, escape(text))


def table(t: Table, anchors: set[str] = frozenset(), css: str = "") -> str:
    slug = re.sub(r"\W+", "-", t.heading.lower()).strip("-")
    lines = [f'<h2 id="{slug}">{escape(t.heading)}</h2>'] if t.heading else []
    lines += [f"<p>{linked(t.note, anchors)}</p>"] if t.note else []
    if not t.rows:
        return "\n".join([*lines, f"<p>{escape(t.empty)}</p>"])
    head = "".join(f"<th>{escape(h)}</th>" for h in t.header)
    opening = f'<table class="{css}">' if css else "<table>"
    lines.append(f"{opening}<tr>{head}</tr>")
    for i, row in enumerate(t.rows):
        cells = [f"<td>{linked(c, anchors)}</td>" for c in row]
        if t.verdicts:
            cells[0] = f'<td class="{verdict_class(row[0])}">{escape(row[0])}</td>'
        attributes = f' id="{t.anchors}-{row[0][1:]}"' if t.anchors else ""
        attributes += ' class="marked"' if i in t.marked else ""
        lines.append(f"<tr{attributes}>" + "".join(cells) + "</tr>")
    return "\n".join([*lines, "</table>"])


def row_ids(t: Table) -> set[str]:
    return {f"{t.anchors}-{row[0][1:]}" for row in t.rows} if t.anchors else set()


def html(story: Story, summary: dict) -> str:
    ops = operations(story)
    violation = summary.get("violation")
    found = evidence(story, ops, violation) if violation else ()
    story = centred_on_cause(story, found)
    proof = evidence_table(found) if violation else None
    history = history_table(story, ops, latencies(ops), violation)
    anchors = row_ids(history) | (row_ids(proof) if proof else set())
    out = page_start(title(summary))
    if summary["description"]:
        out.append(f"<p>{escape(summary['description'])}</p>")
    if violation:  # the first screen tells what broke, why, whose, then the rest
        what, *rest = violation_sentences(summary)
        out.append('<section class="violation" id="violation"><h2>What broke</h2>')
        out.append(f'<p class="what">{linked(what, anchors)}</p>')
        out += [f"<p><b>{escape(label)}:</b> {linked(text, anchors)}</p>"
                for label, text in story_sentences(summary)]  # fmt: skip
        out += [f"<p>{linked(line, anchors)}</p>" for line in rest]
        out += [table(proof, anchors), "</section>"]
    out += [table(t, anchors) for t in summary_tables(story, summary)]
    for name, found in violation_lists(summary):
        items = "".join(f"<li>{linked(v, anchors)}</li>" for v in found)
        out.append(
            f"<details><summary>{escape(name)}: violations</summary><ul>{items}</ul></details>"
        )
    out += [
        '<h2 id="sequence">Sequence</h2>',
        f"<p>{escape(window_sentence(story))} Hover a row for its trace position.</p>",
        sequence_svg(story, window_sentence(story)),
        '<h2 id="plots">Plots</h2>',
    ]
    for fig in figures(story, ops):
        out.append(
            f"<figure><h3>{escape(fig.heading)}</h3>\n{fig.svg}\n"
            f"<figcaption>{escape(fig.caption)}</figcaption></figure>"
        )
    out.append(table(history, anchors, "history"))
    out.append(table(timeline_table(story), anchors))
    reached = behaviours_table(summary)
    if reached is not None:
        out.append(table(reached))
    out += [
        '<p>The full trace is <span class="mono">trace.jsonl</span> (trace#N is line N + 1), '
        'and <span class="mono">trace.perfetto.json</span> opens in Perfetto.</p>',
        "</body></html>",
        "",
    ]
    return "\n".join(out)
