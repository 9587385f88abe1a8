"""``simkit list``, ``simkit run`` and ``simkit report``: the scenario library, its
runs, and their reports."""

import json
import shlex
import sys

import click

from simkit.cli import options
from simkit.cli.app import debug_option, main, rerun_with
from simkit.cli.exits import FINDING, without_finding
from simkit.cli.terminal import Status, echo_lines


@main.command("list")
@debug_option
@click.argument("path", type=click.Path(exists=True), required=False)
def list_scenarios(path: str | None) -> None:
    """List the scenario library, one line each.

    PATH is a scenario file or a folder of them; by default ./scenarios if it exists,
    else the library that ships with simkit.
    """
    from simkit.scenario.load import library_path, load_library
    from simkit.scenario.text import library_lines

    scenarios = load_library(path)
    echo_lines(library_lines(scenarios))
    if path is None:
        click.echo(f"({len(scenarios)} scenarios in {library_path()})", err=True)


@main.command()
@debug_option
@click.argument("path", type=click.Path(exists=True), required=False)
@options.seed("Run with this seed instead of the file's.", default=None)
@options.report("Write each scenario's report into DIR/<scenario>/.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document instead of a table.")
@options.jobs
def run(
    path: str | None, seed: int | None, report_dir: str | None, as_json: bool, jobs: int | None
) -> None:
    """Run one scenario or a folder of them; exit 0 when every expectation and every
    checked invariant holds.

    PATH defaults to ./scenarios if it exists, else the library that ships with simkit.
    An invariant that does not apply to a scenario (or that its file does not list) is
    reported as not checked, never as a pass. Scenarios run on --jobs processes; what is
    printed and written is the same whatever their number.
    """
    from simkit.campaign.cluster import cores
    from simkit.fuzz.attribution import PRESENT
    from simkit.report.batch import in_order, scenario_outcome
    from simkit.scenario.load import load_library
    from simkit.scenario.text import table

    scenarios = load_library(path)
    runs = [(str(s.path), seed, report_dir) for s in scenarios]
    outcomes = in_order(scenario_outcome, runs, jobs or cores())
    results = []
    status = Status()
    for index, scenario in enumerate(scenarios):
        status.show(f"scenario {index + 1}/{len(scenarios)}: {scenario.name}")
        used = seed if seed is not None else scenario.spec.seed
        rerun_with(shlex.join(["simkit", "run", str(scenario.path), "--seed", str(used)]))
        results.append(next(outcomes))
    status.end()
    if as_json:
        click.echo(json.dumps([r.summary for r in results], indent=2))
    else:
        echo_lines(table(results))
    failed = [r for r in results if not r.passed]
    if any(r.attribution != PRESENT for r in failed):
        sys.exit(FINDING)
    sys.exit(without_finding(False, bool(failed), any(r.no_verdict for r in results)))


@main.command()
@debug_option
@click.argument("trace", type=click.Path(exists=True, dir_okay=False))
@options.folder("--out", "out_dir", help="Folder to write the report into.", required=True)
def report(trace: str, out_dir: str) -> None:
    """Re-render a report from a saved trace (summary.json beside it is used when present).

    Without summary.json the report says only what the trace itself records: the
    violations the world noted, no expectations, and no verdict otherwise.
    """
    from pathlib import Path

    from simkit.report import (
        SUMMARY_FILE,
        load_summary,
        load_trace,
        render_report,
        summary_from_trace,
    )

    folder = Path(trace).parent
    if (folder / SUMMARY_FILE).exists():
        summary = load_summary(folder)
    else:
        summary = summary_from_trace(load_trace(trace), folder.name)
        click.echo(f"no {SUMMARY_FILE} beside the trace: the report says what the trace shows")
    paths = render_report(trace, summary, Path(out_dir))
    for name, written in sorted(paths.items()):
        click.echo(f"{name}: {written}")
