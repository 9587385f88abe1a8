"""Commands that meet other implementations of the protocol: ``simkit serve`` puts the
reference relay on the network, ``conform`` and ``diff`` test a relay there, and
``vectors`` prints the byte-exact constructions another client is diffed against."""

import json
import shlex
import sys

import click

from simkit.cli import options
from simkit.cli.app import debug_option, main, rerun_with
from simkit.cli.outputs import check_file
from simkit.cli.terminal import Status, echo_lines


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
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8080,
    show_default=True,
    help="Port to listen on; 0 picks a free one (printed on the first line).",
)
@options.file(
    "--store",
    help="Keep the relay's state in this SQLite file (created if missing); "
    "without it the state is in memory and lost on exit.",
)
@options.file(
    "--members",
    help="The members file: members, groups, capabilities and bearer tokens "
    "(docs/relay.md). Default: the conformance directory shipped with simkit.",
)
@options.variant(
    "Serve a protocol variant's relay instead of the reference relay: a changed "
    "protocol for testing simkit diff, or another release's (older-relay; serving the "
    "same --store without it is that relay's upgrade, docs/releases.md)."
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
    from simkit.sim.variants import load_variant
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
@options.file(
    "--auth",
    "auth_path",
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
    from simkit.wire.conform.text import check_lines, totals_line
    from simkit.wire.members import load_directory
    from simkit.wire.target import HttpTarget

    target = HttpTarget(url)
    auth = load_directory(auth_path or MEMBERS)
    rerun_with(shlex.join(["simkit", "conform", url, *(["--auth", auth_path] * bool(auth_path))]))
    results = run(target, auth, progress=lambda result: echo_lines(check_lines(result)))
    target.close()
    click.echo(totals_line(url, results))
    sys.exit(1 if any(r.outcome == "fail" for r in results) else 0)


@main.command("diff")
@debug_option
@click.argument("url", required=False)
@options.time("Wall-clock budget in seconds, for the search and the shrinking of a divergence.")
@options.seed("Seed of the session.")
@options.count(
    "--cohorts",
    minimum=10,
    help="Cohorts of identities (one per example) in the members file; give the same "
    "number to --write-members and to the run (default: 1000).",
)
@options.out("simkit-diff-<seed>.json")
@options.file(
    "--write-members",
    "members_out",
    help="Write the members file the relay under test must be configured with "
    "(simkit serve --members FILE) and exit.",
    written=True,
)
@options.file(
    "--replay",
    "replay_path",
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
    check_file(path, "--out")
    _run_diff(target, directory, seconds, seed, count, path)


def _run_diff(target, directory, seconds, seed, cohorts, path) -> None:
    """Search, shrink, print; exit 1 on a divergence, 130 when Ctrl-C came first."""
    from simkit.wire.diff import diff
    from simkit.wire.diff.text import progress_line, result_lines

    click.echo(f"diffing {target.name} against the reference relay for {seconds:g} s, seed {seed}")
    status = Status()
    result = diff(target, directory, seconds=seconds, seed=seed, cohorts=cohorts, out=path,
                  progress=lambda result: status.show(progress_line(result)))  # fmt: skip
    status.end()
    target.close()
    echo_lines(result_lines(result, target.name, cohorts, path))
    if result.reproducer is None:
        sys.exit(130 if result.stopped == "interrupted" else 0)
    sys.exit(1)


def _replay_diff(path, target, directory) -> None:
    """Send a reproducer again; exit 1 while the divergence is still there."""
    from simkit.wire.diff import replay, send
    from simkit.wire.diff.run import RelayClock
    from simkit.wire.diff.text import replay_lines

    index, found = replay(path, target, directory, RelayClock(), send)
    target.close()
    echo_lines(replay_lines(target.name, index, found))
    if found:
        sys.exit(1)
