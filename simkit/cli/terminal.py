"""Terminal output: the text modules beside each result return lines, and only the
command line writes them, so a library caller never prints."""

import math
import sys
from collections.abc import Iterable

import click

from simkit.realtime import wall_clock

PERIOD_S = 10.0  # off a terminal, a status line at most this often


def echo_lines(lines: Iterable[str]) -> None:
    """Write each line to standard output."""
    for line in lines:
        click.echo(line)


class Status:
    """One status line on stderr, rewritten in place on a terminal; off a terminal (a
    log file, CI), a whole line every ``PERIOD_S`` seconds at most. Full lines go to
    stdout."""

    def __init__(self, live: bool | None = None) -> None:
        self.live = sys.stderr.isatty() if live is None else live
        self.width = 0
        self.announced = False
        self._shown_at = -math.inf

    def show(self, text: str | None) -> None:
        """Rewrite the status line (``None``: nothing new to say)."""
        if text is None:
            return
        if not self.live:
            now = wall_clock()
            if now - self._shown_at >= PERIOD_S:
                self._shown_at = now
                click.echo(f"  {text}", err=True)
            return
        click.echo(f"\r  {text:<{self.width}}", err=True, nl=False)
        self.width = max(self.width, len(text))

    def end(self) -> None:
        if self.width:
            click.echo("", err=True)
            self.width = 0

    def line(self, text: str) -> None:
        self.end()
        click.echo(text)
