"""report.html: one standalone page (inline CSS and SVG, nothing fetched) with the
summary, the plots and the timeline, to open from a report folder offline."""

from html import escape

from simkit.report.data import Story
from simkit.report.plots import figures
from simkit.report.tables import Table, summary_tables, timeline_table, violation_lists

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; color: #222; margin: 24px auto; max-width: 1000px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; } h3 { font-size: 15px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.fail { color: #b00020; font-weight: bold; } td.pass { color: #006b3c; }
td.unchecked { color: #8a5a00; background: #fff6e0; font-style: italic; }
figure { margin: 12px 0 24px; } figcaption { color: #555; max-width: 900px; }
svg.plot { background: #fff; border: 1px solid #ddd; }
svg text { font: 12px system-ui, sans-serif; fill: #222; }
svg text.axis-title { font-weight: bold; } svg text.small { font-size: 10px; fill: #444; }
svg text.empty { fill: #777; font-style: italic; }
svg .grid { stroke: #e6e6e6; stroke-width: 1; } svg .axis { stroke: #333; stroke-width: 1; }
.mono { font-family: ui-monospace, monospace; }
"""


def verdict_class(cell: str) -> str:
    return {"✓ pass": "pass", "✗ FAIL": "fail"}.get(cell, "unchecked")


def table(t: Table) -> str:
    lines = [f"<h2>{escape(t.heading)}</h2>"] if t.heading else []
    lines += [f"<p>{escape(t.note)}</p>"] if t.note else []
    lines.append("<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in t.header) + "</tr>")
    for row in t.rows:
        cells = [f"<td>{escape(c)}</td>" for c in row]
        if t.verdicts:
            cells[0] = f'<td class="{verdict_class(row[0])}">{escape(row[0])}</td>'
        lines.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join([*lines, "</table>"])


def html(story: Story, summary: dict) -> str:
    title = f"simkit report: {summary['scenario']}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
    ]
    if summary["description"]:
        out.append(f"<p>{escape(summary['description'])}</p>")
    out += [table(t) for t in summary_tables(story, summary)]
    for name, found in violation_lists(summary):
        items = "".join(f"<li>{escape(v)}</li>" for v in found)
        out.append(
            f"<details><summary>{escape(name)}: violations</summary><ul>{items}</ul></details>"
        )
    out.append("<h2>Plots</h2>")
    for fig in figures(story):
        out.append(
            f"<figure><h3>{escape(fig.heading)}</h3>\n{fig.svg}\n"
            f"<figcaption>{escape(fig.caption)}</figcaption></figure>"
        )
    out.append(table(timeline_table(story)))
    out += [
        "<p>The sequence diagram around the focus is in report.md; the full trace is "
        '<span class="mono">trace.jsonl</span>, and <span class="mono">trace.perfetto.json</span> '
        "opens in Perfetto.</p>",
        "</body></html>",
        "",
    ]
    return "\n".join(out)
