"""The ``simkit`` command. Thin: it parses arguments and wires the layers together.

Exit codes, the same for every command (README, "Exit codes"): 0 everything held,
1 a finding (a violation, a failed expectation) or an internal error, 2 a usage or
input error; 141 when whoever reads the output stops reading (``| head``).
"""

import json
import os
import select
import shlex
import sys
import traceback

import click

from simkit import __version__
from simkit.errors import InputError, describe

_DEBUG, _ARGV, _RERUN = "simkit.debug", "simkit.argv", "simkit.rerun"


class InputProblem(click.ClickException):
    """An ``InputError``: one line naming the file or option and the rule, exit 2."""

    exit_code = 2


class InternalError(click.ClickException):
    """An exception from inside simkit or the stack it runs (not the user's input):
    a short message with the notes that say where in the world it was raised, and
    the command to rerun; the full traceback only under ``--debug``. Exit 1."""

    exit_code = 1

    def __init__(self, exc: Exception, rerun: str, debug: bool) -> None:
        super().__init__(describe(exc))
        self.exc, self.rerun, self.debug = exc, rerun, debug

    def show(self, file=None) -> None:
        if self.debug:
            click.echo("".join(traceback.format_exception(self.exc)), err=True, nl=False)
            click.echo(f"internal error (traceback above); rerun: {self.rerun}", err=True)
            return
        click.echo(f"internal error: {self.message}", err=True)
        click.echo(f"rerun with the full traceback: {self.rerun} --debug", err=True)


class Commands(click.Group):
    """Input errors become one line and exit 2; any other exception becomes an
    ``InternalError`` (exit 1), never a bare traceback."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ARGV] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except InputError as exc:
            raise InputProblem(str(exc)) from None
        except BrokenPipeError as exc:
            if not _stdout_gone():
                raise InternalError(exc, _rerun(ctx), ctx.meta.get(_DEBUG, False)) from None
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise click.exceptions.Exit(141) from None
        except Exception as exc:
            raise InternalError(exc, _rerun(ctx), ctx.meta.get(_DEBUG, False)) from None


def _rerun(ctx: click.Context) -> str:
    return ctx.meta.get(_RERUN) or shlex.join(["simkit", *ctx.meta.get(_ARGV, [])])


def _stdout_gone() -> bool:
    """Whether standard output is a pipe whose reader has gone (``simkit replay ... |
    head``). Then the command stops quietly with the shell's status for SIGPIPE, as a
    Unix tool does, and what is still buffered goes nowhere (flushing it at exit would
    raise again). Any other broken pipe is an internal error."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
    except (OSError, ValueError, AttributeError):  # no file descriptor (a test runner)
        return False
    return any(events & select.POLLERR for _, events in poller.poll(0))


def _debug(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta[_DEBUG] = True


def debug_option(command):
    """``--debug`` on a command: an internal error prints its full traceback."""
    return click.option(
        "--debug",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=_debug,
        help="On an internal error, print the full traceback.",
    )(command)


def rerun_with(command: str) -> None:
    """Name the command that reproduces an internal error raised from here on."""
    click.get_current_context().meta[_RERUN] = command


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="simkit")
def main() -> None:
    """simkit: a deterministic simulator and property-testing harness for the
    Encrypted Record Sync Relay protocol."""


class Command(click.Command):
    """A command whose line in ``simkit --help`` is its whole first sentence (click
    cuts it at about 45 characters; the help formatter wraps it instead)."""

    def get_short_help_str(self, limit: int = 45) -> str:
        if self.short_help:
            return self.short_help
        paragraph = " ".join((self.help or "").split("\n\n")[0].split())
        sentence, stop, _ = paragraph.partition(". ")
        return sentence + "." if stop else paragraph


main.command_class = Command


@main.command()
@debug_option
def vectors() -> None:
    """Print every byte-exact construction computed on fixed inputs (JSON).

    Diff the output against another implementation: canonicalJson, storage keys,
    thumbprints, fingerprint, selfSig, pairing code, sealed and signed record,
    blob, key wrap, derived IDs, log chain, recovery bundle and invite.
    """
    from simkit.vectors import compute

    click.echo(json.dumps(compute(), indent=2, ensure_ascii=False))


@main.command()
@debug_option
@click.option(
    "--time",
    "seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Wall-clock budget in seconds, for the search and the shrinking of a failure.",
)
@click.option(
    "--shrink-time",
    "shrink_seconds",
    type=click.FloatRange(min=0),
    default=None,
    help="Give shrinking its own budget: seconds from the first violation "
    "(default: what is left of --time; 0: do not shrink).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the fuzz session.")
@click.option(
    "--max-steps",
    type=click.IntRange(min=1),
    default=25,
    show_default=True,
    help="Steps per example (Hypothesis shrinks failures below it).",
)
@click.option(
    "--variant",
    "variant_ref",
    metavar="MODULE:NAME|PATH.py:NAME",
    help="Fuzz a protocol variant (docs/variants.md) instead of the honest stack; "
    "MODULE is looked up in the current directory first.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Reproducer path (default: simkit-repro-<variant>-<seed>.json).",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the run's figures, invariants, behaviours reached and finding as JSON.",
)
def fuzz(
    seconds: float,
    shrink_seconds: float | None,
    seed: int,
    max_steps: int,
    variant_ref: str | None,
    out: str | None,
    json_path: str | None,
) -> None:
    """Run the state machines until the budget ends or an invariant breaks.

    On a violation: write a reproducer at once (JSON), overwrite it as shrinking
    finds shorter failing runs, print the shortest one's steps and exit 1. Ctrl-C
    stops with the best reproducer so far. Otherwise print examples run, steps per
    second and the invariants checked.
    """
    from pathlib import Path

    from simkit.fuzz.runner import SHRINK_CAP_S
    from simkit.fuzz.runner import fuzz as run_fuzz
    from simkit.sim.variant import HONEST, load_variant

    if shrink_seconds is not None and shrink_seconds > SHRINK_CAP_S:
        raise click.BadParameter(
            f"at most {SHRINK_CAP_S:g} s (Hypothesis gives up shrinking after 300 s)",
            param_hint="--shrink-time",
        )
    variant = load_variant(variant_ref) if variant_ref else HONEST
    path = out or f"simkit-repro-{variant.name}-{seed}.json"
    if not Path(path).resolve().parent.is_dir():
        raise click.BadParameter(f"no folder {Path(path).parent}", param_hint="--out")
    _replay_known_first(variant_ref, path)
    budget = f"{seconds:g} s"
    if shrink_seconds is not None:
        budget += f" + {shrink_seconds:g} s to shrink" if shrink_seconds else ", no shrinking"
    click.echo(f"fuzzing {variant.name} ({variant.description}) for {budget}, seed {seed}")
    status = _Status()

    def progress(result) -> None:
        if result.found_after is None:
            rate = result.steps / result.seconds if result.seconds else 0
            status.show(
                f"{result.seconds:6.1f} s  {result.examples} examples  {result.steps} steps  "
                f"{rate:,.0f} steps/s"
            )
        elif result.reproducer is not None:
            best = result.reproducer
            invariant = best.violations[0]["invariant"] if best.violations else "crash"
            status.show(
                f"shrinking {result.seconds - result.found_after:6.1f} s: "
                f"{len(best.steps)} steps left (from {result.first_steps}), {invariant}, "
                f"{result.shrink_attempts} attempts"
            )

    def written(result) -> None:
        if not status.announced:  # the first failing run, unshrunk
            status.announced = True
            status.line(
                f"violation after {result.found_after:.1f} s ({result.first_steps} steps): "
                f"reproducer written to {path}"
                + (
                    ""
                    if shrink_seconds == 0
                    else "; shrinking it (Ctrl-C stops with the best so far)"
                )
            )

    result = run_fuzz(
        variant, seconds=seconds, shrink_seconds=shrink_seconds or None,
        shrink=shrink_seconds != 0, seed=seed, max_steps=max_steps, variant_ref=variant_ref,
        out=path, progress=progress, written=written,
    )  # fmt: skip
    status.end()
    if json_path:
        Path(json_path).write_text(json.dumps(result.to_json(path), indent=2) + "\n")
    if result.failure is None:
        rate = result.steps / result.seconds if result.seconds else 0
        click.echo(
            f"{'interrupted (Ctrl-C): ' if result.interrupted else ''}"
            f"no violation: {result.examples} examples, {result.steps} steps, "
            f"{rate:,.0f} steps/s in {result.seconds:.1f} s"
        )
        click.echo("invariants checked: " + ", ".join(result.invariants))
        _print_coverage(result.coverage)
        sys.exit(130 if result.interrupted else 0)
    _report_violation(result, path, shrink_seconds)
    sys.exit(1)


def _replay_known_first(variant_ref: str | None, path: str) -> None:
    """Replay the known findings of this variant (docs/campaigns.md); the first that
    still fails is this run's violation, copied to ``path`` (exit 1)."""
    import attrs

    from simkit.fuzz.corpus import KNOWN, still_failing

    known, replayed = still_failing(KNOWN, variant_ref)
    if known is None:
        if replayed:
            click.echo(f"replayed {replayed} known findings from {KNOWN} first: none fails now")
        return
    attrs.evolve(known.reproducer, violations=known.violations).write(path)
    click.echo(f"VIOLATION: a known finding still fails (replayed before searching): {known.path}")
    click.echo(known.failure)
    click.echo(f"reproducer: {path}  (replay with: simkit replay {path})")
    sys.exit(1)


class _Status:
    """One status line on stderr, rewritten in place; full lines go to stdout."""

    def __init__(self) -> None:
        self.width = 0
        self.announced = False

    def show(self, text: str) -> None:
        click.echo(f"\r  {text:<{self.width}}", err=True, nl=False)
        self.width = max(self.width, len(text))

    def end(self) -> None:
        if self.width:
            click.echo("", err=True)
            self.width = 0

    def line(self, text: str) -> None:
        self.end()
        click.echo(text)


def _report_violation(result, path: str, shrink_seconds: float | None) -> None:
    from simkit.fuzz.runner import SHRINK_CAP_S

    best = result.reproducer
    took = (
        f"after {result.seconds - result.found_after:.1f} s and "
        f"{result.shrink_attempts} attempt{'s' * (result.shrink_attempts != 1)}"
    )
    kept = "the reproducer holds the shortest failing run found"
    budget = "--shrink-time" if shrink_seconds else "--time"
    ended = {
        "done": f"shrunk {took}",
        "off": "not shrunk",
        "budget": f"shrinking cut off by the {budget} budget {took}: {kept}; "
        "give shrinking more time with --shrink-time SECONDS",
        "cap": f"shrinking stopped at its {SHRINK_CAP_S:g} s limit {took}: {kept}",
        "attempts": f"shrinking cut off {took}: {kept}",
        "interrupted": f"shrinking was interrupted (Ctrl-C) {took}: {kept}",
    }[result.shrinking]
    click.echo(
        f"VIOLATION after {result.found_after:.1f} s in a run of {result.first_steps} steps; "
        f"{ended}"
    )
    click.echo(result.failure)
    if best is None:
        click.echo("no reproducer: the run broke before its world was built")
        return
    click.echo(f"steps ({len(best.steps)}):")
    for index, step in enumerate(best.steps):
        click.echo(f"  {index:3d}  {json.dumps(step)}")
    click.echo(f"reproducer: {path}  (replay with: simkit replay {path})")


def _print_coverage(coverage) -> None:
    """Behaviours reached K/N, and the never-reached list (docs/fuzzing.md says why)."""
    from simkit.sim.behaviours import CATALOGUE

    missing = coverage.missing()
    click.echo(f"behaviours reached {len(coverage.reached)}/{len(CATALOGUE)}")
    if missing:
        click.echo("never reached: " + ", ".join(b.name for b in missing))


@main.command()
@debug_option
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Also render the replayed run as a report into DIR (docs/reports.md).",
)
def replay(file: str, report_dir: str | None) -> None:
    """Rerun a reproducer exactly and say which invariant failed where.

    Exits 1 when an invariant fails (the reproducer reproduces), 0 when none does,
    2 when the file is missing or broken. With --report, the run becomes a report whose
    violation section names the invariant, the step it broke after, and the trace
    events behind it.
    """
    from simkit.fuzz.reproducer import Reproducer, replay_summary
    from simkit.fuzz.reproducer import replay as run_replay

    repro = Reproducer.load(file)
    result = run_replay(repro)
    click.echo(f"trace-hash: {result.trace_hash}")
    if report_dir:
        from pathlib import Path

        from simkit.report import render_report

        summary = replay_summary(repro, result, Path(file).stem)
        paths = render_report(result.world.trace, summary, report_dir)
        click.echo(f"report: {paths['report.html']}")
    if not result.violations:
        click.echo(f"no violation in {len(repro.steps)} steps and quiescence")
        return
    click.echo(f"violated {result.where(repro)}")
    for violation in result.violations:
        click.echo(f"  {violation}")
    sys.exit(1)


@main.command("list")
@debug_option
@click.argument("path", type=click.Path(exists=True), required=False)
def list_scenarios(path: str | None) -> None:
    """List the scenario library, one line each.

    PATH is a scenario file or a folder of them; by default ./scenarios if it exists,
    else the library that ships with simkit.
    """
    from simkit.scenario.load import library_path, load_library

    scenarios = load_library(path)
    width = max(len(s.name) for s in scenarios)
    for scenario in scenarios:
        click.echo(f"{scenario.name:<{width}}  {scenario.description}")
    if path is None:
        click.echo(f"({len(scenarios)} scenarios in {library_path()})", err=True)


@main.command()
@debug_option
@click.argument("path", type=click.Path(exists=True), required=False)
@click.option("--seed", type=int, default=None, help="Run with this seed instead of the file's.")
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write each scenario's report into DIR/<scenario>/.",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document instead of a table.")
def run(path: str | None, seed: int | None, report_dir: str | None, as_json: bool) -> None:
    """Run one scenario or a folder of them; exit 0 when every expectation and every
    checked invariant holds.

    PATH defaults to ./scenarios if it exists, else the library that ships with simkit.
    An invariant that does not apply to a scenario (or that its file does not list) is
    reported as not checked, never as a pass.
    """
    from pathlib import Path

    from simkit.scenario.load import load_library
    from simkit.scenario.run import run_scenario

    scenarios = load_library(path)
    if seed is not None:
        scenarios = [s.with_seed(seed) for s in scenarios]
    results = []
    with click.progressbar(
        scenarios, label="scenarios", file=sys.stderr, item_show_func=lambda s: s and s.name
    ) as bar:
        for scenario in bar:
            rerun_with(
                shlex.join(["simkit", "run", str(scenario.path), "--seed", str(scenario.spec.seed)])
            )
            out = Path(report_dir) / scenario.name if report_dir else None
            if out is not None:  # the trace streams to the report folder as it is written
                out.mkdir(parents=True, exist_ok=True)
            result = run_scenario(scenario, trace_path=out and out / "trace.jsonl")
            results.append(result)
            if out is not None:
                from simkit.report import render_report

                render_report(out / "trace.jsonl", result.summary(), out)
    if as_json:
        click.echo(json.dumps([r.summary() for r in results], indent=2))
    else:
        _print_table(results)
    sys.exit(0 if all(r.passed for r in results) else 1)


def _print_table(results) -> None:
    width = max(len(r.scenario.name) for r in results)
    for result in results:
        failed = [c for c in result.expectations if not c.passed]
        checked = [i for i in result.invariants if i.checked]
        broken = [i for i in checked if i.violations]
        verdict = "PASS" if result.passed else "FAIL"
        met = sum(c.passed for c in result.expectations)
        unchecked = len(result.invariants) - len(checked)
        click.echo(
            f"{verdict}  {result.scenario.name:<{width}}  seed {result.seed}  "
            f"{met}/{len(result.expectations)} expectations  "
            f"{len(checked) - len(broken)}/{len(checked)} invariants held"
            + (f", {unchecked} not checked" if unchecked else "")
        )
        for check in failed:
            click.echo(f"        expected {check.name}: {check.detail or 'did not happen'}")
        for inv in broken:
            more = len(inv.violations) - 1
            click.echo(f"        {inv.violations[0]}" + (f" (+{more})" if more else ""))
        click.echo(f"      trace-hash: {result.trace_hash}")
    passed = sum(r.passed for r in results)
    click.echo(f"{passed} passed, {len(results) - passed} failed")


@main.command()
@debug_option
@click.argument("trace", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    required=True,
    help="Folder to write the report into.",
)
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


BENCH_GROUPS = ("crypto", "relay", "sim", "fuzz", "campaign")


@main.command()
@debug_option
@click.argument("group", type=click.Choice([*BENCH_GROUPS, "all"]), default="all")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Also write JSON here.")
@click.option("--quick", is_flag=True, help="Shorter measurements (rougher figures).")
@click.option(
    "--no-crypto-cache",
    is_flag=True,
    help="Verify every signature, even one another device already verified on the same bytes.",
)
def bench(group: str, json_path: str | None, quick: bool, no_crypto_cache: bool) -> None:
    """Measure and print figures and the performance targets (never asserted: machines
    are noisy)."""
    import importlib

    import attrs

    from simkit.bench.targets import verdicts
    from simkit.protocol.sigcache import SIGNATURES

    SIGNATURES.configure(not no_crypto_cache)
    cache = SIGNATURES.describe()
    rows = []
    for name in BENCH_GROUPS if group == "all" else (group,):
        click.echo(f"running {name} benchmark...", err=True)
        rows.extend(importlib.import_module(f"simkit.bench.{name}").run(quick=quick))
    width = max(len(r.name) for r in rows)
    click.echo(f"signature cache: {cache}{'  (quick run)' if quick else ''}")
    for row in rows:
        note = f"  ({row.note})" if row.note else ""
        click.echo(f"{row.group:<8} {row.name:<{width}}  {row.value:>14,.1f} {row.unit}{note}")
    checked = verdicts(rows)
    if checked:
        click.echo("targets:")
        for line in checked:
            click.echo(f"  {line}")
    if json_path:
        report = {
            "signature_cache": cache,
            "quick": quick,
            "rows": [attrs.asdict(r) for r in rows],
            "targets": checked,
        }
        with open(json_path, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
        click.echo(f"wrote {json_path}", err=True)


@main.command()
@debug_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8080,
    show_default=True,
    help="Port to listen on; 0 picks a free one (printed on the first line).",
)
@click.option(
    "--store",
    type=click.Path(dir_okay=False),
    default=None,
    help="Keep the relay's state in this SQLite file (created if missing); "
    "without it the state is in memory and lost on exit.",
)
@click.option(
    "--members",
    type=click.Path(dir_okay=False),
    default=None,
    help="The members file: members, groups, capabilities and bearer tokens "
    "(docs/relay.md). Default: the conformance directory shipped with simkit.",
)
@click.option(
    "--variant",
    "variant_ref",
    metavar="MODULE:NAME|PATH.py:NAME",
    help="Serve a protocol variant's relay instead of the reference relay. Only for "
    "testing simkit diff: a variant is a deliberately changed protocol.",
)
@click.option(
    "--no-rate-limits",
    is_flag=True,
    help="Turn the relay's per-member rate limits off (load tests, benchmarks).",
)
def serve(
    host: str,
    port: int,
    store: str | None,
    members: str | None,
    variant_ref: str | None,
    no_rate_limits: bool,
) -> None:
    """Serve the reference relay over HTTP (Hypercorn on Trio) until Ctrl-C or SIGTERM.

    Every write is durable in --store before its answer is sent. The first line
    printed is the URL it listens on.
    """
    import trio

    from simkit.relay import Relay
    from simkit.sim.variant import load_variant
    from simkit.wire.serve import open_server, run

    relay_class = load_variant(variant_ref).relay if variant_ref else Relay
    server = open_server(host, port, members, store, relay_class, not no_rate_limits)
    where = f"store {store}" if store else "in memory"
    if members is None:
        click.echo(
            "simkit serve: no --members: serving the conformance directory, whose tokens "
            "are public (docs/relay.md)",
            err=True,
        )

    def announce(url: str) -> None:
        click.echo(f"listening on {url} ({where})")
        sys.stdout.flush()

    trio.run(run, server, announce)


@main.command()
@debug_option
@click.argument("url")
@click.option(
    "--auth",
    "auth_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="A members file whose [tokens] name the identities the checks use "
    "(default: the conformance directory shipped with simkit).",
)
def conform(url: str, auth_path: str | None) -> None:
    """Run the relay conformance checks over HTTP against the relay at URL.

    The relay must have an empty store and know the conformance directory
    (docs/relay.md, "Conformance over HTTP"). Prints one row per check (passed,
    failed or skipped, and the spec line it tests); exit 1 if any check failed.
    """
    from simkit.wire.conform import MEMBERS, run
    from simkit.wire.members import load_directory
    from simkit.wire.target import HttpTarget

    target = HttpTarget(url)
    auth = load_directory(auth_path or MEMBERS)
    rerun_with(shlex.join(["simkit", "conform", url, *(["--auth", auth_path] * bool(auth_path))]))
    results = run(target, auth, progress=_print_check)
    target.close()
    counts = {o: sum(r.outcome == o for r in results) for o in ("pass", "fail", "skip")}
    click.echo(
        f"{url}: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped "
        f"of {len(results)} checks (spec lines: relay-spec.md)"
    )
    sys.exit(1 if counts["fail"] else 0)


def _print_check(result) -> None:
    check = result.check
    click.echo(
        f"{result.outcome.upper():<4}  {check.spec:<9} {check.area:<12} {check.name}"
        + (f"\n        {result.detail}" if result.detail else "")
    )


@main.command("diff")
@debug_option
@click.argument("url", required=False)
@click.option(
    "--time",
    "seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Wall-clock budget in seconds, for the search and the shrinking of a divergence.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the session.")
@click.option(
    "--cohorts",
    type=click.IntRange(min=10),
    default=None,
    help="Cohorts of identities (one per example) in the members file; give the same "
    "number to --write-members and to the run (default: 1000).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Reproducer path (default: simkit-diff-<seed>.json).",
)
@click.option(
    "--write-members",
    "members_out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the members file the relay under test must be configured with "
    "(simkit serve --members FILE) and exit.",
)
@click.option(
    "--replay",
    "replay_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Send a reproducer's requests again (to a relay with an empty store); "
    "exit 1 while the divergence is still there.",
)
def diff_command(
    url: str | None,
    seconds: float,
    seed: int,
    cohorts: int | None,
    out: str | None,
    members_out: str | None,
    replay_path: str | None,
) -> None:
    """Differential fuzzing: the same seeded raw requests to the reference relay
    (in-process) and to the relay at URL; the first divergence in status, error code
    or body is shrunk and written as a reproducer (docs/relay.md, "Differential
    fuzzing"). Exit 0 when none was found in the budget, 1 on a divergence.
    """
    from pathlib import Path

    from simkit.wire.diff import DEFAULT_COHORTS, diff_directory, members_toml
    from simkit.wire.target import HttpTarget

    count = cohorts or DEFAULT_COHORTS
    directory = diff_directory(count)
    if members_out:
        Path(members_out).write_text(members_toml(directory), encoding="utf-8")
        click.echo(f"wrote {members_out}: {count} cohorts, {len(directory.tokens)} tokens")
        return
    if url is None:
        raise click.UsageError("give the relay's URL (or --write-members FILE)")
    target = HttpTarget(url)
    if replay_path:
        _replay_diff(replay_path, target, directory)
        return
    path = out or f"simkit-diff-{seed}.json"
    if not Path(path).resolve().parent.is_dir():
        raise click.BadParameter(f"no folder {Path(path).parent}", param_hint="--out")
    _run_diff(target, directory, seconds, seed, count, path)


def _run_diff(target, directory, seconds, seed, cohorts, path) -> None:
    from simkit.wire.diff import diff

    click.echo(f"diffing {target.name} against the reference relay for {seconds:g} s, seed {seed}")
    status = _Status()

    def progress(result) -> None:
        if result.found_after is None:
            status.show(f"{result.seconds:6.1f} s  {result.examples} examples  "
                        f"{result.requests} requests")  # fmt: skip
        elif result.reproducer is not None:
            status.show(f"shrinking: {len(result.reproducer.requests)} requests left, "
                        f"{result.shrink_attempts} attempts")  # fmt: skip

    result = diff(target, directory, seconds=seconds, seed=seed, cohorts=cohorts, out=path,
                  progress=progress)  # fmt: skip
    status.end()
    target.close()
    budget = (f"{result.examples} examples, {result.requests} requests in {result.seconds:.1f} s, "
              f"{result.cohorts_used} of {cohorts} cohorts")  # fmt: skip
    best = result.reproducer
    if best is None:
        ended = "the cohorts ran out" if result.stopped == "cohorts" else "the budget ran out"
        click.echo(f"no divergence ({ended}): {budget}")
        sys.exit(130 if result.stopped == "interrupted" else 0)
    how = {
        "done": f"shrunk in {result.shrink_attempts} replays",
        "budget": f"shrinking cut off by --time after {result.shrink_attempts} replays",
        "cohorts": f"shrinking cut off: the cohorts ran out after {result.shrink_attempts} replays",
        "interrupted": "shrinking interrupted (Ctrl-C)",
        "unreachable": f"the relay stopped answering: {result.unreachable}",
    }[result.stopped]
    click.echo(
        f"DIVERGENCE after {result.found_after:.1f} s in an example of {result.first_requests} "
        f"requests ({budget}); {how}"
    )
    click.echo(f"requests ({len(best.requests)}), answered alike until the last:")
    for index, (caller, request) in enumerate(zip(best.callers, best.requests, strict=True)):
        query = (
            "?" + "&".join(f"{k}={v}" for k, v in request.query.items()) if request.query else ""
        )
        click.echo(f"  {index:3d}  {request.method} {request.path}{query}  as {caller or '-'}")
    click.echo(f"{best.rule}:")
    for line in best.found:
        click.echo(f"  {line}")
    click.echo(f"reproducer: {path}  (replay on a relay with an empty store: "
               f"simkit diff {target.name} --replay {path})")  # fmt: skip
    sys.exit(1)


def _replay_diff(path, target, directory) -> None:
    from simkit.wire.diff import replay, send
    from simkit.wire.diff.run import RelayClock

    index, found = replay(path, target, directory, RelayClock(), send)
    target.close()
    if not found:
        click.echo(f"no divergence: every answer of {target.name} matches the reference relay")
        return
    click.echo(f"divergence at request {index}:")
    for line in found:
        click.echo(f"  {line}")
    sys.exit(1)


@main.command()
@debug_option
@click.option(
    "--time",
    "seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Wall-clock budget in seconds: the whole campaign's, or with --mutants each mutant's.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes of the embedded Dask LocalCluster [default: one per core].",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    default=None,
    help="Run on the Dask cluster of this scheduler (tcp://host:8786) instead (docs/campaigns.md).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the campaign.")
@click.option(
    "--variant",
    "variant_refs",
    multiple=True,
    metavar="MODULE:NAME|PATH.py:NAME",
    help="Fuzz a protocol variant instead of the honest stack; repeat it to fuzz several "
    "(chunks take turns).",
)
@click.option("--stop-on-failure", is_flag=True, help="Stop every chunk at the first finding.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the JSON here.")
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False),
    help="Write the dashboard (index.html), campaign.json and the findings' reproducers here.",
)
@click.option(
    "--mutants",
    "mutants_ref",
    metavar="MODULE:NAME",
    help="Mutation analysis: fuzz each Variant or source Mutant of the list NAME in MODULE "
    "for --time seconds and score how many are killed.",
)
@click.option(
    "--max-steps", type=click.IntRange(min=1), default=25, show_default=True,
    help="Steps per example.",
)  # fmt: skip
@click.option(
    "--shrink-time",
    "shrink_seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds a chunk may shrink a violation, from the moment it finds it.",
)
@click.option(
    "--chunks",
    type=click.IntRange(min=1),
    default=None,
    help="Stop after this many chunks: chunks that end by their example budget make a "
    "campaign that reruns the same from its seed.",
)
@click.option(
    "--known",
    "known_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder of known findings, replayed first; new findings are added to it "
    "[default: .hypothesis/simkit-findings].",
)
def campaign(
    seconds: float,
    workers: int | None,
    scheduler: str | None,
    seed: int,
    variant_refs: tuple[str, ...],
    stop_on_failure: bool,
    json_path: str | None,
    report_dir: str | None,
    mutants_ref: str | None,
    max_steps: int,
    shrink_seconds: float,
    chunks: int | None,
    known_dir: str | None,
) -> None:
    """Fuzz on a Dask cluster: many chunks in parallel, findings deduplicated.

    Chunks of examples, each seeded from --seed, run on every worker until the budget
    ends; each distinct failure is written as a reproducer into the known findings
    (replayed first by the next fuzz or campaign). Exit 0 when nothing broke, 1 on a
    finding (with --mutants: when a mutant survives), 2 on a usage error.
    """
    from pathlib import Path

    from simkit.campaign import Plan, connect, load_mutants, run_campaign
    from simkit.campaign.chunk import CHUNK_EXAMPLES
    from simkit.campaign.report import summary, write_report
    from simkit.fuzz.corpus import KNOWN
    from simkit.fuzz.runner import SHRINK_CAP_S
    from simkit.sim.variant import load_variant, ref_resolved_from

    for bad, hint in (
        (workers is not None and scheduler is not None, "--workers and --scheduler"),
        (bool(mutants_ref and variant_refs), "--mutants and --variant"),
        (bool(mutants_ref and stop_on_failure), "--mutants and --stop-on-failure"),
    ):
        if bad:
            raise click.UsageError(f"{hint} do not go together")
    if shrink_seconds > SHRINK_CAP_S:
        raise click.BadParameter(f"at most {SHRINK_CAP_S:g} s", param_hint="--shrink-time")
    for ref in variant_refs:
        load_variant(ref)
    variants = tuple(ref_resolved_from(ref, Path.cwd()) for ref in variant_refs) or (None,)
    plan = Plan(
        seconds=seconds, seed=seed, variants=variants,
        mutants=load_mutants(mutants_ref) if mutants_ref else (), chunks=chunks,
        chunk_examples=None if mutants_ref else CHUNK_EXAMPLES,  # a mutant: --time alone
        max_steps=max_steps, shrink_seconds=shrink_seconds, stop_on_failure=stop_on_failure,
        corpus=Path(known_dir) if known_dir else KNOWN,
    )  # fmt: skip
    status = _Status()

    def progress(state) -> None:
        rate = state.steps / state.seconds if state.seconds else 0
        status.show(
            f"{state.seconds:6.1f} s  workers {len(state.workers)}  chunks {len(state.outcomes)} "
            f"done, {state.running} running  {state.examples:,} examples  {state.steps:,} steps "
            f"({rate:,.0f}/s)  behaviours {len(state.coverage.reached)}  "
            f"findings {len(state.findings)}"
        )

    def found(state, finding) -> None:
        status.line(
            f"FINDING {finding.key.invariant} on {finding.key.target} ({finding.key.machine}): "
            f"{finding.failure.splitlines()[0]}"
            + (f"\n  reproducer: {finding.path}" if finding.path else "")
        )

    where = (
        scheduler or f"a LocalCluster of {f'{workers} workers' if workers else 'a worker per core'}"
    )
    click.echo(f"campaign: seed {seed}, {seconds:g} s, on {where}")
    with connect(workers, scheduler) as client:
        result = run_campaign(plan, client, progress, found)
    status.end()
    _print_campaign(result)
    data = summary(result)
    if json_path:
        Path(json_path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if report_dir:
        click.echo(f"dashboard: {write_report(result, report_dir)}")
    if plan.mutants:
        failed = data["mutation"]["killed"] < data["mutation"]["mutants"]
    else:
        failed = bool(result.findings)
    sys.exit(1 if failed else 130 if result.interrupted else 0)


def _print_campaign(result) -> None:
    from simkit.campaign.mutation import scores

    known = result.known
    if known:
        failing = sum(k["failure"] is not None for k in known)
        click.echo(f"known findings replayed first: {len(known)}, {failing} still failing")
    rate = result.steps / result.seconds if result.seconds else 0
    click.echo(
        f"{'interrupted (Ctrl-C): ' if result.interrupted else ''}"
        f"{len(result.outcomes)} chunks, {result.examples:,} examples, {result.steps:,} steps, "
        f"{rate:,.0f} steps/s in {result.seconds:.1f} s on {len(result.seen)} workers"
        + (f" ({len(result.lost_workers)} lost)" if result.lost_workers else "")
    )
    if result.lost:
        click.echo(f"chunks lost (their workers kept dying): {len(result.lost)}")
    invariants = sorted({name for o in result.outcomes for name in o["invariants"]})
    click.echo("invariants checked: " + (", ".join(invariants) or "none (no chunk finished)"))
    _print_coverage(result.coverage)
    if result.plan.mutants:
        table = scores(result.plan.mutants, result.outcomes)
        killed = sum(s.verdict == "killed" for s in table)
        click.echo(f"mutation score: {killed}/{len(table)} killed")
        for s in table:
            how = (
                f"by {s.invariant} after {s.found_after:.1f} s, shrunk {s.first_steps} -> "
                f"{s.shrunk_steps} steps"
                if s.verdict == "killed"
                else f"[{s.invariant}] fails on the honest code too: a fault of the stack"
                if s.verdict == "honest-fails"
                else f"{s.examples:,} examples, {s.steps:,} steps"
            )
            click.echo(f"  {s.verdict:<8} {s.name}  {how}")
        return
    if not result.findings:
        click.echo("no violation")
        return
    click.echo(f"{len(result.findings)} distinct findings:")
    for f in result.findings:
        click.echo(
            f"  {f.key.invariant} on {f.key.target} ({f.key.machine}), {f.steps} steps, "
            f"{f.hits} hits: {f.failure.splitlines()[0]}"
        )
        if f.path:
            click.echo(f"    replay with: simkit replay {f.path}")


if __name__ == "__main__":
    sys.exit(main())
