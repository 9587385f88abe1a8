"""``simkit bench``: figures and the performance targets, printed, never asserted."""

import json

import click

from simkit.cli import options
from simkit.cli.app import debug_option, main
from simkit.cli.terminal import echo_lines

BENCH_GROUPS = ("crypto", "relay", "sim", "fuzz", "campaign")
LONG_GROUPS = ("steering", "snapshots")  # minutes each: only when asked for by name


@main.command()
@debug_option
@click.argument("group", type=click.Choice([*BENCH_GROUPS, *LONG_GROUPS, "all"]), default="all")
@options.json("Also write JSON here.")
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
    from simkit.bench.text import table
    from simkit.protocol.sigcache import SIGNATURES

    SIGNATURES.configure(not no_crypto_cache)
    cache = SIGNATURES.describe()
    rows = []
    for name in BENCH_GROUPS if group == "all" else (group,):
        click.echo(f"running {name} benchmark...", err=True)
        rows.extend(importlib.import_module(f"simkit.bench.{name}").run(quick=quick))
    checked = verdicts(rows)
    echo_lines(table(rows, cache, quick, checked))
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
