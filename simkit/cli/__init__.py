"""The ``simkit`` command. Thin: it parses arguments and wires the layers together;
what a result says in text is beside the result (``simkit/*/text.py``).

Exit codes, the same for every command (README, "Exit codes"; ``simkit.cli.exits``):
0 everything held, 1 a finding (a violation, a failed expectation, a crash inside a
simulated world), 2 a usage or input error, 3 no verdict, 4 failures of the base only,
70 simkit itself failed; 130 when Ctrl-C stopped a fuzz, campaign or diff run before a
finding; 141 when whoever reads the output stops reading (``| head``).

Importing this package registers every command on ``main``.
"""

from simkit.cli import (  # noqa: F401 (they register)
    campaigns,
    checking,
    fuzzing,
    mutation,
    reviewing,
    rules,
    scenarios,
    wire,
)
from simkit.cli.app import main
from simkit.cli.bench import BENCH_GROUPS

__all__ = ["BENCH_GROUPS", "main"]
