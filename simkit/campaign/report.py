"""A campaign's report: its JSON summary, and the dashboard (one standalone HTML page
drawn from that summary) with each finding's reproducer beside it.

The verdict never claims more than ran: "no violation" names the examples, steps,
time and behaviours reached behind it, per target, and says which chunks were cut
short or lost.
"""

import json
from html import escape
from pathlib import Path

from simkit import __version__
from simkit.campaign.driver import Campaign
from simkit.campaign.mutation import scores
from simkit.fuzz.mutants import Mutant
from simkit.fuzz.reproducer import Reproducer, replay, replay_summary
from simkit.report import render_report, svg
from simkit.report.html import page_start, table
from simkit.report.tables import Table
from simkit.sim.behaviours import CATALOGUE, worth_a_look
from simkit.sim.exercise import NEVER
from simkit.sim.situations import FLOOR, SITUATIONS

NAMED = {b.name: b for b in CATALOGUE}

FINDINGS_DIR = "findings"
PLOT_HEIGHT = 200
_OUTCOME_FIELDS = (
    "index",
    "target",
    "seed",
    "worker",
    "ended",
    "examples",
    "steps",
    "seconds",
    "at",
    "found_after",
    "first_steps",
    "shrinking",
    "failure",
)


def summary(campaign: Campaign) -> dict:
    """Everything the dashboard shows, as JSON."""
    plan, outcomes = campaign.plan, campaign.outcomes
    steps, seconds = campaign.steps, campaign.seconds
    out = {
        "simkit": __version__,
        "verdict": verdict(campaign),
        "seed": plan.seed,
        "budget": {
            "seconds": plan.seconds,
            "seconds_per": "mutant" if plan.mutants else "campaign",
            "chunks": plan.chunks,
            "chunk_examples": plan.chunk_examples,
            "max_steps": plan.max_steps,
            "shrink_seconds": plan.shrink_seconds,
            "shrink_attempts": plan.shrink_attempts,
            "stop_on_failure": plan.stop_on_failure,
        },
        "cluster": {
            "scheduler": campaign.scheduler,
            "workers": campaign.seen,
            "lost_workers": campaign.lost_workers,
        },
        "seconds": seconds,
        "interrupted": campaign.interrupted,
        "stopped": campaign.stopped,
        "chunks": len(outcomes),
        "chunks_cut": sum(o["ended"] in ("time", "stopped") for o in outcomes),
        "chunks_lost": campaign.lost,
        "examples": campaign.examples,
        "steps": steps,
        "steps_per_second": steps / seconds if seconds else 0.0,
        "targets": _targets(campaign),
        "change": {t: e.to_json() for t, e in sorted(campaign.exercise.items())},
        "behaviours": campaign.coverage.to_json(),
        "reached_over_time": campaign.reached,
        "findings": [f.to_json() for f in campaign.findings],
        "base_findings": [f.to_json() for f in campaign.base_findings],
        "known": campaign.known,
        "outcomes": [{k: o.get(k) for k in _OUTCOME_FIELDS} for o in outcomes],
    }
    if plan.mutants:
        table = [s.to_json() for s in scores(plan.mutants, outcomes)]
        killed = sum(s["verdict"] == "killed" for s in table)
        out["mutation"] = {"killed": killed, "mutants": len(table), "scores": table}
    return out


def verdict(campaign: Campaign) -> str:
    if campaign.plan.mutants:
        killed = sum(
            s.verdict == "killed" for s in scores(campaign.plan.mutants, campaign.outcomes)
        )
        return f"{killed}/{len(campaign.plan.mutants)} mutants killed"
    count = len(campaign.findings)
    if count:
        return f"{count} finding{'s' * (count != 1)}"
    if campaign.base_findings:
        return (
            f"present without the change: {len(campaign.base_findings)} failure(s) of the "
            "base, none caused by the change"
        )
    return NEVER if campaign.unexercised else "no violation"


def _targets(campaign: Campaign) -> list[dict]:
    """Per target: the work done, what it found and how often its change ran (a change
    asked for by ``--variant``: a neighbouring version of a release is no verdict's)."""
    asked = {v for v in campaign.plan.variants if v is not None}
    rows: dict[str, dict] = {}
    for o in campaign.outcomes:
        row = rows.setdefault(
            o["target"], {"target": o["target"], "chunks": 0, "examples": 0, "steps": 0}
        )
        row["chunks"] += 1
        row["examples"] += o["examples"]
        row["steps"] += o["steps"]
    for row in rows.values():
        row["findings"] = sum(f.key.target == row["target"] for f in campaign.findings)
        exercise = campaign.exercise.get(row["target"])
        judged = exercise is not None and exercise.changed and row["target"] in asked
        row["exercised"] = exercise.exercised if judged else None
        row["change"] = [] if exercise is None else exercise.lines()
    return sorted(rows.values(), key=lambda r: r["target"])


def write_report(campaign: Campaign, folder: str | Path) -> Path:
    """Write campaign.json, each finding's reproducer and the report of its replay
    under findings/ (as ``simkit replay FILE --report DIR`` would), and index.html,
    which links to them; the path of index.html."""
    folder = Path(folder)
    (folder / FINDINGS_DIR).mkdir(parents=True, exist_ok=True)
    data = summary(campaign)
    sources = {m.name for m in campaign.plan.mutants if isinstance(m, Mutant)}
    for finding, entry in zip(campaign.findings, data["findings"], strict=True):
        if finding.reproducer is None:
            continue
        stem = f"{FINDINGS_DIR}/{finding.key.stem}"
        Reproducer.from_json(finding.reproducer).write(folder / f"{stem}.json")
        entry["reproducer_file"] = f"{stem}.json"
        if finding.key.target not in sources:  # a source mutant's replays on its copy only
            entry["replay_report"] = _replay_report(folder, stem)
    (folder / "campaign.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    index = folder / "index.html"
    index.write_text(dashboard(data), encoding="utf-8")
    return index


def _replay_report(folder: Path, stem: str) -> str:
    """Replay a finding's reproducer and render the run's report beside it; its path
    (relative to ``folder``), or why there is none."""
    repro = Reproducer.load(folder / f"{stem}.json")
    try:
        result = replay(repro)
    except Exception as exc:  # a crash: the reproducer's own replay shows it
        return f"none: the replay raised {type(exc).__name__}"
    render_report(result.world.trace, replay_summary(repro, result, Path(stem).name), folder / stem)
    return f"{stem}/report.html"


def dashboard(data: dict) -> str:
    title = f"simkit campaign: {data['verdict']}"
    out = [*page_start(title), f"<p>{escape(headline(data))}</p>"]
    if "mutation" in data:
        out.append(table(mutation_table(data)))
    else:
        out.append(table(findings_table(data)))
        out += [_finding_html(f) for f in data["findings"]]
        if data["base_findings"]:
            out.append(table(findings_table(data, base=True)))
            out += [_finding_html(f) for f in data["base_findings"]]
        out.append(table(targets_table(data)))
    if data["known"]:
        out.append(table(known_table(data)))
    out += [
        "<h2>Throughput</h2>",
        throughput_svg(data),
        "<p>Each chunk's steps per second, from its start to its end, per worker.</p>",
        "<h2>Behaviours</h2>",
        behaviours_svg(data),
        "<p>Catalogue behaviours reached by the chunks that had finished, over time.</p>",
    ]
    never = data["behaviours"]["never"]
    look = [name for name in never if name in NAMED and worth_a_look(NAMED[name])]
    seldom = [name for name in never if name not in look]
    for what, names in (("worth a look", look), ("seldom a concern", seldom)):
        out.append(
            f"<details><summary>never reached, {what}: {len(names)} of "
            f"{data['behaviours']['catalogue']}</summary>"
            f"<ul>{''.join(f'<li>{escape(name)}</li>' for name in names)}</ul></details>"
        )
    out.append(table(situations_table(data)))
    out.append(table(chunks_table(data)))
    out += ["</body></html>", ""]
    return "\n".join(out)


def headline(data: dict) -> str:
    cluster, budget = data["cluster"], data["budget"]
    behaviours = data["behaviours"]
    per = "each mutant's" if budget["seconds_per"] == "mutant" else "a budget of"
    parts = [
        f"Seed {data['seed']}, {per} {budget['seconds']:g} s, on {len(cluster['workers'])} "
        f"worker{'s' * (len(cluster['workers']) != 1)} ({cluster['scheduler']}):",
        f"{data['chunks']} chunks, {data['examples']:,} examples, {data['steps']:,} steps in "
        f"{data['seconds']:.1f} s ({data['steps_per_second']:,.1f} steps/s);",
        f"behaviours reached {behaviours['reached']}/{behaviours['catalogue']}.",
    ]
    if data["chunks_cut"]:
        parts.append(f"{data['chunks_cut']} chunks were cut short by the time budget or a stop.")
    if data["chunks_lost"]:
        parts.append(f"{len(data['chunks_lost'])} chunks were lost: their workers kept dying.")
    if cluster["lost_workers"]:
        parts.append(
            f"{len(cluster['lost_workers'])} workers left during the campaign; Dask reran "
            "their chunks elsewhere."
        )
    if data["interrupted"]:
        parts.append("Interrupted (Ctrl-C): the counts are what ran until then.")
    elif data["stopped"] == "finding":
        parts.append("Stopped at the first finding (--stop-on-failure).")
    return " ".join(parts)


def situations_table(data: dict) -> Table:
    """Each rare situation: the worlds per 1,000 that reached it, against its floor."""
    behaviours = data["behaviours"]
    rates = behaviours.get("situations_per_1000", {})
    rows = [
        (name.removeprefix("situation "), SITUATIONS[name], f"{rate:.1f}",
         "yes" if rate >= FLOOR else "below")
        for name, rate in rates.items()
    ]  # fmt: skip
    note = (
        f"Rare moments a clause of the spec is about, over {behaviours.get('worlds', 0):,} "
        f"worlds; the default mix is tuned to reach each at least {FLOOR:g} times per 1,000."
    )
    return Table("Situations", note, ("situation", "clause", "per 1,000 worlds", "floor"), rows)


def findings_table(data: dict, base: bool = False) -> Table:
    """The findings (``base``: the failures met under a change that the base has too)."""
    listed = data["base_findings"] if base else data["findings"]
    rows = [
        (
            f["target"], f["machine"], f["invariant"], f["failure"].splitlines()[0],
            "" if f["steps"] is None else str(f["steps"]), f"{f['found_at']:.1f} s",
            str(f["hits"]), (f.get("attribution") or {}).get("verdict", "the stack's"),
            f.get("reproducer_file") or f.get("path") or "",
        )
        for f in listed
    ]  # fmt: skip
    if base:
        note = (
            "Failures met while fuzzing a change that the same world and steps also break on "
            "the base (the change's own search went on past them): the stack's, each kept in "
            "a reproducer of the base's run."
        )
        return Table("Present without the change", note, HEADER, rows)
    note = (
        "Each distinct failure once, with its shortest reproducer (replay: simkit replay FILE). "
        "Found at: campaign seconds when a chunk first sent it back; hits: how many chunks "
        "(and known findings) found it; whose: caused by the change (the base holds on its "
        "steps), or the stack's (no change fuzzed)."
        if rows
        else "No invariant broke in any chunk"
        + (" (what each change exercised: What ran, below)." if data["change"] else ".")
    )
    return Table("Findings", note, HEADER, rows)


HEADER = ("target", "machine", "invariant", "failure", "steps", "found at", "hits", "whose",
          "reproducer")  # fmt: skip


def _finding_html(finding: dict) -> str:
    """One finding: what broke, a link to its reproducer and its steps."""
    path = finding.get("reproducer_file") or finding.get("path")
    link = f'<a href="{escape(path)}">{escape(path)}</a>' if path else "no reproducer"
    rendered = finding.get("replay_report", "")
    if rendered.endswith(".html"):
        link += f'; the replayed run\'s report: <a href="{escape(rendered)}">{escape(rendered)}</a>'
    elif rendered:
        link += f"; its report: {escape(rendered)}"
    listed = finding["reproducer"]["steps"] if finding["reproducer"] else []
    steps = "".join(f"<li>{escape(json.dumps(step))}</li>" for step in listed)
    return (
        f"<h3>{escape(finding['invariant'])} on {escape(finding['target'])} "
        f"({escape(finding['machine'])} machine)</h3>\n"
        f'<p class="mono">{escape(finding["failure"])}</p>\n'
        f'<p>Reproducer: {link}; replay it with <span class="mono">simkit replay '
        f"{escape(path or 'FILE')}</span>.</p>\n"
        f'<details><summary>{len(listed)} steps</summary><ol start="0">{steps}</ol>'
        "</details>"
    )


def targets_table(data: dict) -> Table:
    rows = [
        (
            t["target"],
            str(t["chunks"]),
            f"{t['examples']:,}",
            f"{t['steps']:,}",
            "; ".join(t["change"]) or "the protocol as specified",
            f"{t['findings']} findings"
            if t["findings"]
            else NEVER
            if t["exercised"] is False
            else "no violation",
        )
        for t in data["targets"]
    ]
    note = (
        'The examples run on each target; "no violation" holds for exactly these examples '
        "and the behaviours reached below. The change: how often it departed from the spec "
        "in each rule it declares (and in how many examples), or how often the methods it "
        "overrides ran; a change that never did gives no verdict (exit 3)."
    )
    header = ("target", "chunks", "examples", "steps", "the change ran", "verdict")
    return Table("What ran", note, header, rows)


def known_table(data: dict) -> Table:
    rows = [
        (k["path"], k["target"], k["failure"].splitlines()[0] if k["failure"] else "passes now")
        for k in data["known"]
    ]
    note = "Findings of earlier campaigns, replayed before this one searched."
    return Table("Known findings", note, ("reproducer", "target", "replayed"), rows)


def mutation_table(data: dict) -> Table:
    mutation = data["mutation"]
    rows = []
    for s in mutation["scores"]:
        killed = s["verdict"] == "killed"
        rows.append(
            (
                s["name"],
                s["kind"],
                s["verdict"],
                s["invariant"] or "",
                f"{s['found_after']:.1f} s" if killed else "",
                f"{s['first_steps']} → {s['shrunk_steps']}" if killed else "",
                f"{s['examples']:,}",
                f"{s['steps']:,}",
                s["what"],
            )
        )
    survivors = [s["name"] for s in mutation["scores"] if s["verdict"] != "killed"]
    note = (
        f"Score {mutation['killed']}/{mutation['mutants']}. Killed: the invariant that broke, "
        "seconds until it did, and the failing run's steps before and after shrinking. "
        + (f"Not killed: {', '.join(survivors)}." if survivors else "Every mutant was killed.")
    )
    header = (
        "mutant",
        "kind",
        "verdict",
        "invariant",
        "found after",
        "steps",
        "examples",
        "steps run",
        "what it changes",
    )
    return Table("Mutation score", note, header, rows)


def chunks_table(data: dict) -> Table:
    rows = [
        (
            str(o["index"]),
            o["target"],
            str(o["seed"]),
            o["worker"],
            o["ended"],
            str(o["examples"]),
            str(o["steps"]),
            f"{o['seconds']:.1f}",
        )
        for o in data["outcomes"]
    ]
    note = (
        "Each chunk: its seed (from the campaign's), the worker that ran it and how it ended: "
        "its example budget spent, a violation, cut by the time budget, or stopped."
    )
    header = ("chunk", "target", "seed", "worker", "ended", "examples", "steps", "seconds")
    return Table("Chunks", note, header, rows)


def _chart(ident: str, title: str, series: list, y_title: str, end: float, **kw) -> str:
    """A line per (name, points) under a legend, on the campaign's time axis."""
    peak = max((y for _, points in series for _, y in points), default=0)
    frame = svg.Frame.below_legend(PLOT_HEIGHT, (0.0, max(end, 1.0)), (0.0, svg.nice_top(peak)))
    parts = [*svg.x_axis(frame, "campaign time (s)"), *svg.y_axis(frame, y_title)]
    items = []
    for i, (name, points) in enumerate(series):
        colour, dash = svg.stroke(i)
        parts.append(svg.polyline(frame, points, colour, dash, text=name, **kw))
        items.append((name, colour, dash))
    if not series:
        parts.append(svg.message(frame, "No chunk finished."))
    parts += svg.legend(frame, items)
    return svg.document(ident, ident, title, frame, parts)


def throughput_svg(data: dict) -> str:
    """Each worker's steps per second: each chunk's rate, held from its start to its end."""
    per_worker: dict[str, list[tuple[float, float]]] = {}
    for o in sorted(data["outcomes"], key=lambda o: o["at"]):
        if o["seconds"]:
            rate = o["steps"] / o["seconds"]
            per_worker.setdefault(o["worker"], []).extend(
                [(max(o["at"] - o["seconds"], 0.0), rate), (o["at"], rate)]
            )
    series = sorted(per_worker.items())
    return _chart(
        "plot-throughput", "Steps per second per worker", series, "steps/s", data["seconds"]
    )


def behaviours_svg(data: dict) -> str:
    points = [(0.0, 0), *map(tuple, data["reached_over_time"])]
    if len(points) > 1:
        points.append((data["seconds"], points[-1][1]))
    series = [("behaviours reached", points)] if len(points) > 1 else []
    return _chart(
        "plot-behaviours",
        "Behaviours reached over time",
        series,
        f"of {data['behaviours']['catalogue']} behaviours",
        data["seconds"],
        stairs=True,
    )
