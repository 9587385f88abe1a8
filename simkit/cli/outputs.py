"""Where a command writes (``--out``, ``--json``, ``--report``, ``--known``, ...),
checked before it runs: a path it could not write is refused at once (exit 2, one
line), not when its results are ready (a depth-3 check once ended in an internal error
at its ``--json``). Writing is tried, not inferred from permissions, which do not tell
for root, /proc or a read-only mount."""

import os
import tempfile
from pathlib import Path

import click


def _refuse(option: str, why: str):
    raise click.BadParameter(why, param_hint=f"'{option}'")


def _create_in(folder: Path, option: str) -> None:
    """A scratch file made in ``folder`` and removed (an unnamed one where the system
    can), or the reason the system gives why not."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        _refuse(option, f"cannot create a file in {folder} ({exc.strerror})")


def check_file(path: str | None, option: str) -> str | None:
    """A file to write: its folder exists and takes new files; an existing file is
    writable."""
    if path is None:
        return None
    if not path:
        _refuse(option, "an empty path names no file")
    folder = Path(path).resolve().parent  # through links, as open() goes
    if not folder.is_dir():
        _refuse(option, f"{folder} is not a folder" if folder.exists() else f"no folder {folder}")
    _create_in(folder, option)
    if Path(path).exists() and not os.access(path, os.W_OK):
        _refuse(option, f"{path} is read-only")
    return path


def check_folder(path: str | Path | None, option: str) -> str | Path | None:
    """A folder to write into, made with its missing parents when written: the nearest
    part of the path as given that exists (a link counts, even one leading nowhere,
    as ``mkdir(parents=True)`` sees it) is a folder that takes new files."""
    if path is None:
        return None
    if not str(path):
        _refuse(option, "an empty path names no folder")
    nearest = Path(path).absolute()
    while not os.path.lexists(nearest):
        nearest = nearest.parent
    if not nearest.is_dir():
        why = "a link to nothing" if nearest.is_symlink() and not nearest.exists() else "a file"
        _refuse(option, f"{nearest} is {why}, not a folder")
    _create_in(nearest, option)
    return path
