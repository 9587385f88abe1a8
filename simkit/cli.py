"""The ``simkit`` command. Thin: it parses arguments and wires the layers together."""

import json
import sys

import click

from simkit import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="simkit")
def main() -> None:
    """simkit: a deterministic simulator and property-testing harness for the
    Encrypted Record Sync Relay protocol."""


@main.command()
def vectors() -> None:
    """Print every byte-exact construction computed on fixed inputs (JSON).

    Diff the output against another implementation: canonicalJson, storage keys,
    thumbprints, fingerprint, selfSig, pairing code, sealed and signed record,
    blob, key wrap, derived IDs, log chain, recovery bundle and invite.
    """
    from simkit.vectors import compute

    click.echo(json.dumps(compute(), indent=2, ensure_ascii=False))


BENCH_GROUPS = ("crypto", "relay", "sim")


@main.command()
@click.argument("group", type=click.Choice([*BENCH_GROUPS, "all"]), default="all")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Also write JSON here.")
@click.option("--quick", is_flag=True, help="Shorter measurements (rougher figures).")
def bench(group: str, json_path: str | None, quick: bool) -> None:
    """Measure and print figures (never asserted: machines are noisy)."""
    import importlib

    import attrs

    rows = []
    for name in BENCH_GROUPS if group == "all" else (group,):
        click.echo(f"running {name} benchmark...", err=True)
        rows.extend(importlib.import_module(f"simkit.bench.{name}").run(quick=quick))
    width = max(len(r.name) for r in rows)
    for row in rows:
        note = f"  ({row.note})" if row.note else ""
        click.echo(f"{row.group:<8} {row.name:<{width}}  {row.value:>14,.1f} {row.unit}{note}")
    if json_path:
        with open(json_path, "w", encoding="utf-8") as fh:
            json.dump([attrs.asdict(r) for r in rows], fh, indent=2)
        click.echo(f"wrote {json_path}", err=True)


if __name__ == "__main__":
    sys.exit(main())
