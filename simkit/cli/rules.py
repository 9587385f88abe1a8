"""``simkit rules``: the spec's rule catalogue, the IDs a variant declares."""

import json

import click

from simkit.cli.app import debug_option, main
from simkit.cli.terminal import echo_lines


@main.command()
@debug_option
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the catalogue as JSON.")
def rules(name: str | None, as_json: bool) -> None:
    """List the spec's rules: ID, section, what judges each and where simkit makes it.

    These IDs are what a variant's ``changes=`` takes and what a model finding names
    (docs/variants.md). With NAME, show that rule in full; a NAME that is not an ID is
    exit 2 with the nearest IDs.
    """
    from simkit.model.catalogue import catalogue, resolve

    chosen = [catalogue()[resolve(name)]] if name else list(catalogue().values())
    if as_json:
        click.echo(json.dumps([rule.to_json() for rule in chosen], indent=2))
        return
    if name:
        [rule] = chosen
        echo_lines([
            f"{rule.id}  ({rule.section})", f"  {rule.text}",
            f"  judged by: {', '.join(rule.judged_by)}",
            f"  made by: {', '.join(rule.made_by)}",
            f"  override points: {', '.join(rule.override_points) or 'none (a module)'}",
        ])  # fmt: skip
        return
    width = max(len(rule.id) for rule in chosen)
    section = None
    for rule in chosen:
        if rule.section != section:
            section = rule.section
            click.echo(f"\n{section}")
        points = f"  [{', '.join(rule.override_points)}]" if rule.override_points else ""
        click.echo(f"  {rule.id:<{width}}  judged by {', '.join(rule.judged_by)}{points}")
    click.echo(f"\n{len(chosen)} rules; simkit rules ID shows one in full")
