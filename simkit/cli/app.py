"""The ``simkit`` group and its one error convention, shared by every command.

Exit codes (README, "Exit codes"): an ``InputError`` is the user's to fix, exit 2 in
one line; any other exception is an internal error, a short message naming the
command to rerun with ``--debug``: exit 1 when it escaped a simulated world (the stack
under test crashed there), 70 when simkit itself failed; 141 when whoever reads the
output stops.
"""

import os
import select
import shlex
import sys
import traceback

import click

from simkit import __version__
from simkit.cli.exits import FINDING, SIMKIT_FAILED
from simkit.errors import InputError, describe, in_world

_DEBUG, _ARGV, _RERUN = "simkit.debug", "simkit.argv", "simkit.rerun"


class InputProblem(click.ClickException):
    """An ``InputError``: one line naming the file or option and the rule, exit 2."""

    exit_code = 2


class InternalError(click.ClickException):
    """An exception from inside simkit or the stack it runs (not the user's input):
    a short message with the notes that say where in the world it was raised, and
    the command to rerun; the full traceback only under ``--debug``. Exit 1 when it
    escaped a simulated world (the stack under test crashed: a finding), 70 when simkit
    itself failed outside any world (README, "Exit codes")."""

    def __init__(self, exc: Exception, rerun: str, debug: bool) -> None:
        super().__init__(describe(exc))
        self.exc, self.rerun, self.debug = exc, rerun, debug
        self.exit_code = FINDING if in_world(exc) else SIMKIT_FAILED

    def show(self, file=None) -> None:
        if self.debug:
            click.echo("".join(traceback.format_exception(self.exc)), err=True, nl=False)
            click.echo(f"internal error (traceback above); rerun: {self.rerun}", err=True)
            return
        click.echo(f"internal error: {self.message}", err=True)
        click.echo(f"rerun with the full traceback: {self.rerun} --debug", err=True)


class Commands(click.Group):
    """Input errors become one line and exit 2; any other exception becomes an
    ``InternalError`` (exit 1 or 70), never a bare traceback."""

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
