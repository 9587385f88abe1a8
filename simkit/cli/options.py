"""Options several commands share, declared once so that ``--time`` or ``--seed`` means
the same (type, default, metavar) wherever it appears; each command passes only its
own help text, and a default where the commands really differ. Each decorator is
named after its flag (``@options.seed(...)`` is ``--seed``). The checks that go with
them are here too, so each says the same thing from every command."""

import click

from simkit.cli.outputs import check_file, check_folder

VARIANT_METAVAR = "MODULE:NAME|PATH.py:NAME"


def file(*decls: str, help: str, written: bool = False):
    """An option naming one file to read or write (FILE in ``--help``); no default.
    ``written``: refused at once if it could not be written (``outputs.check_file``)."""
    callback = (lambda ctx, param, path: check_file(path, param.opts[0])) if written else None
    return click.option(
        *decls, type=click.Path(dir_okay=False), default=None, help=help, callback=callback
    )


def folder(*decls: str, help: str, required: bool = False):
    """An option naming a folder to write into (DIRECTORY in ``--help``); no default.
    Refused at once if it could not be made or written into (``outputs.check_folder``)."""
    return click.option(
        *decls,
        type=click.Path(file_okay=False),
        default=None,
        required=required,
        help=help,
        callback=lambda ctx, param, path: check_folder(path, param.opts[0]),
    )


def count(*decls: str, minimum: int, help: str):
    """An option counting something, at least ``minimum``; no default (the command
    decides what its absence means)."""
    return click.option(*decls, type=click.IntRange(min=minimum), default=None, help=help)


def time(help: str):
    """``--time SECONDS``: a command's wall-clock budget, read as ``seconds``."""
    return click.option(
        "--time",
        "seconds",
        type=click.FloatRange(min=0, min_open=True),
        default=60.0,
        show_default=True,
        help=help,
    )


def seed(help: str, default: int | None = 0):
    """``--seed N``; ``default=None`` leaves the seed to what is run (a scenario's own)."""
    return click.option(
        "--seed",
        type=click.IntRange(min=0),
        default=default,
        show_default=default is not None,
        help=help,
    )


def fresh_seed(help: str):
    """``--seed N``; without it a fresh seed is drawn (and printed by the command), so
    every run explores new examples while ``--seed N`` repeats one exactly."""

    def draw(ctx, param, value):
        if value is not None:
            return value
        from simkit.realtime import fresh_seed as drawn

        return drawn()

    return click.option(
        "--seed",
        type=click.IntRange(min=0),
        default=None,
        callback=draw,
        help=help + " Default: a fresh seed, printed in the first line.",
    )


def max_steps(help: str):
    """``--max-steps N``: steps per fuzz example."""
    return click.option(
        "--max-steps", type=click.IntRange(min=1), default=25, show_default=True, help=help
    )


def shrink_time(help: str, *, default: float | None, zero_ok: bool):
    """``--shrink-time SECONDS``, read as ``shrink_seconds``. ``zero_ok``: 0 is
    accepted (a fuzz run that does not shrink); a campaign's chunks always shrink."""
    return click.option(
        "--shrink-time",
        "shrink_seconds",
        type=click.FloatRange(min=0, min_open=not zero_ok),
        default=default,
        show_default=default is not None,
        help=help,
    )


def verbose():
    """``--verbose``: every violation, not the first few of each invariant."""
    return click.option(
        "--verbose", is_flag=True, help="Print every violation, not the first few per invariant."
    )


def variant(help: str, *, multiple: bool = False):
    """``--variant REF``, read as ``variant_ref`` (or ``variant_refs`` when repeatable)."""
    return click.option(
        "--variant",
        "variant_refs" if multiple else "variant_ref",
        multiple=multiple,
        metavar=VARIANT_METAVAR,
        help=help,
    )


def release(command):
    """``--rollout``, ``--mix`` and ``--base REF``, read as ``rollout``, ``mix`` and
    ``base_ref``: fuzz a release from the base to ``--variant`` (docs/releases.md)."""
    for option in reversed((
        click.option(
            "--rollout", is_flag=True,
            help="Fuzz a release: every world starts on --base; devices upgrade to "
            "--variant one at a time at drawn moments, the relay before, during or after.",
        ),
        click.option(
            "--mix", is_flag=True,
            help="Fuzz a release: keep a drawn part of the fleet on each version for the "
            "whole run (the relay still upgrades at a drawn moment).",
        ),
        click.option(
            "--base", "base_ref", metavar=VARIANT_METAVAR,
            help="The version a release starts from (default: honest, the protocol as "
            "specified; or a built-in version: older-relay, older-client, previous-release, "
            "newer-client; or MODULE:NAME).",
        ),
    )):  # fmt: skip
        command = option(command)
    return command


def release_of(rollout: bool, mix: bool, base_ref: str | None, variant=None):
    """The release the options ask for: its kinds, and its base version. A usage error
    (exit 2) when ``--base`` comes without ``--rollout`` or ``--mix``, or when the
    release would go from a version to itself (``variant``: the new one, None: the
    protocol as specified): a release of nothing, whose "no violation" says nothing."""
    from simkit.sim.variant import HONEST
    from simkit.sim.variants import load_variant

    kinds = frozenset(k for k, on in (("rollout", rollout), ("mix", mix)) if on)
    if base_ref and not kinds:
        raise click.UsageError(
            "--base names the version a release starts from: add --rollout or --mix"
        )
    base = load_variant(base_ref, where=f"--base {base_ref}") if base_ref else HONEST
    if kinds and base == (variant or HONEST):
        raise click.UsageError(
            f"--rollout/--mix fuzz a release from --base to --variant, and both are "
            f"{base.name}: name the new version (--variant) or the old one (--base)"
        )
    return kinds, base


def out(default_name: str):
    """``--out FILE``: where a finding's reproducer is written."""
    return file("--out", help=f"Reproducer path (default: {default_name}).")


def json(help: str):
    """``--json FILE``, read as ``json_path``: the run's figures as JSON."""
    return file("--json", "json_path", help=help, written=True)


def report(help: str):
    """``--report DIR``, read as ``report_dir``: where a rendered report goes."""
    return folder("--report", "report_dir", help=help)


jobs = click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes to run scenarios on [default: the cores this process may use]; the "
    "output is the same whatever their number.",
)
"""``--jobs N``: scenarios in parallel (``simkit run``, ``simkit compare``)."""
