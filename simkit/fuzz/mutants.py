"""Source mutants: the protocol with one rule broken in the code itself, for measuring
whether the harness catches what a careless change would introduce.

A ``Mutant`` names one file under ``simkit/``, an exact snippet and its
replacement, and the spec rule the change breaks. ``mutated_copy`` writes a copy of
the ``simkit`` package with the change applied, to be imported first (``PYTHONPATH``)
by a fresh process: the mutant runs exactly like the real thing, with nothing
patched at run time. A variant (``simkit.sim.variant``) overrides a method;
a mutant can change any line, including those no method isolates.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import attrs

import simkit
from simkit.errors import SimkitError


class MutantError(SimkitError, ValueError):
    """A mutant does not apply: its file is missing or its snippet is not there once."""


@attrs.frozen
class Mutant:
    name: str
    path: str  # under simkit/ (e.g. "relay/records.py"), or under ``root``
    old: str  # must occur exactly once in the file (or at ``offset``)
    new: str
    rule: str  # the spec rule it breaks, in the spec's words (an operator's: what it did)
    offset: int | None = None  # where ``old`` starts (an operator mutant, simkit mutate)
    root: str = ""  # the folder ``path`` is under, first on the import path; "": simkit's

    def patched(self, source: str) -> str:
        if self.offset is not None:
            end = self.offset + len(self.old)
            if source[self.offset : end] != self.old:
                raise MutantError(f"mutant {self.name}: {self.path} changed since it was drawn")
            return source[: self.offset] + self.new + source[end:]
        count = source.count(self.old)
        if count != 1:
            raise MutantError(
                f"mutant {self.name}: its snippet occurs {count} times in simkit/{self.path}, "
                "not once"
            )
        return source.replace(self.old, self.new)


def mutated_copy(mutant: Mutant, into: Path) -> Path:
    """Copy the ``simkit`` package (or the top folder or module of a ``root`` mutant's
    file) into ``into`` with ``mutant`` applied; return the folder to put first on
    ``PYTHONPATH``."""
    if mutant.root:
        top = mutant.path.split("/")[0]
        source, target, shown = Path(mutant.root) / top, into / top, Path(mutant.root)
    else:
        source, target, shown = Path(simkit.__file__).parent, into / "simkit", Path("simkit")
    if source.is_dir():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
    elif source.is_file():
        shutil.copyfile(source, target)
    path = (target.parent if mutant.root else target) / mutant.path
    if not path.is_file():
        raise MutantError(f"mutant {mutant.name}: no file {shown / mutant.path}")
    path.write_text(mutant.patched(path.read_text(encoding="utf-8")), encoding="utf-8")
    return into


def run_mutated(
    mutant: Mutant, into: Path, args: list[str], timeout: float
) -> subprocess.CompletedProcess:
    """Run ``python -m simkit.cli ARGS`` against a mutated copy; the process's result."""
    root = mutated_copy(mutant, into)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "simkit.cli", *args],
        cwd=into,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
