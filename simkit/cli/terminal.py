"""Terminal output: the text modules beside each result return lines, and only the
command line writes them, so a library caller never prints."""

from collections.abc import Iterable

import click


def echo_lines(lines: Iterable[str]) -> None:
    """Write each line to standard output."""
    for line in lines:
        click.echo(line)


class Status:
    """One status line on stderr, rewritten in place; full lines go to stdout."""

    def __init__(self) -> None:
        self.width = 0
        self.announced = False

    def show(self, text: str | None) -> None:
        """Rewrite the status line (``None``: nothing new to say)."""
        if text is None:
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
