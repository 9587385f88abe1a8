"""Variant references: ``simkit fuzz --variant REF`` loads a ``Variant``. REF is
``module:name`` (the module is looked up in the current directory first, as pytest
does with its rootdir, then among installed packages), ``path/to/file.py:name``,
``honest`` or the name of a built-in version (``simkit.sim.versions``:
``older-relay``, ``newer-client``, ...).
"""

import contextlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from simkit.client import Device
from simkit.relay import Relay
from simkit.sim.variant import HONEST, Variant, VariantError
from simkit.sim.versions import BUILT_IN


def _built_in() -> dict[str, Variant]:
    return {HONEST.name: HONEST, **BUILT_IN}


def named() -> tuple[str, ...]:
    """The versions a reference may name without a module: ``honest`` and the built-in
    other versions (``simkit.sim.versions``)."""
    return tuple(_built_in())


def load_variant(
    ref: str, reproducer: str | Path | None = None, where: str | None = None
) -> Variant:
    """Load the Variant ``ref`` names: ``module:name`` or ``path/to/file.py:name``.

    ``reproducer``: the file ``ref`` was read from (its "variant" field), so that
    errors name that field instead of the ``--variant`` option; ``where``: how else
    errors name where ``ref`` came from (a scenario's key).
    """
    if where is None:
        where = f'{reproducer}: "variant" {ref}' if reproducer else f"--variant {ref}"
    if ref in named():
        return _built_in()[ref]
    source, name = _split(ref, where)
    if _is_file(source):
        module = _load_file(source, where)
    else:
        given = "reproducer" if reproducer else "option" if where.startswith("--") else "file"
        module = _import(source, name, where, given)
    variant = getattr(module, name, None)
    if isinstance(variant, Variant):
        return variant
    if variant is None:
        found = sorted(k for k, v in vars(module).items() if isinstance(v, Variant))
        listed = f"the Variants it defines: {', '.join(found)}" if found else "it defines none"
        raise VariantError(f"{where}: {source} has no Variant named {name!r} ({listed})")
    if isinstance(variant, type) and issubclass(variant, Relay | Device):
        role = "relay" if issubclass(variant, Relay) else "device"
        kind, fix = "class", f'wrap it: a_name = Variant("name", "what changes", {role}={name})'
    else:
        kind, fix = type(variant).__name__, "a Variant wraps a Relay or Device subclass"
    raise VariantError(
        f"{where}: {name!r} in {source} is a {kind}, not a Variant; {fix} (docs/variants.md)"
    )


def ref_relative_to(ref: str, folder: str | Path) -> str:
    """``ref`` as a reproducer in ``folder`` stores it: a file path relative to that
    folder (so the reproducer replays from any directory while both stay put); a
    module name as it is."""
    source, _, name = ref.rpartition(":")
    if not _is_file(source):
        return ref
    relative = os.path.relpath(Path(source).resolve(), Path(folder).resolve())
    return f"{Path(relative).as_posix()}:{name}"


def ref_resolved_from(ref: str, folder: str | Path) -> str:
    """The inverse of ``ref_relative_to``: a stored file path made absolute again."""
    source, _, name = ref.rpartition(":")
    if not _is_file(source):
        return ref
    return f"{(Path(folder) / source).resolve()}:{name}"


def _split(ref: str, where: str) -> tuple[str, str]:
    source, sep, name = ref.rpartition(":")
    if not sep or not source or not name.isidentifier():
        raise VariantError(
            f"{where}: expected MODULE:NAME or PATH.py:NAME (NAME: the Variant's variable), "
            f"or a built-in version: {', '.join(named())}"
        )
    if not _is_file(source) and ("/" in source or "\\" in source):
        raise VariantError(f"{where}: a file path must end in .py")
    return source, name


def _is_file(source: str) -> bool:
    return source.endswith(".py")


def _load_file(source: str, where: str) -> ModuleType:
    """Execute a .py file as a module (its folder first on sys.path, so that it can
    import its neighbours)."""
    path = Path(source)
    if not path.is_file():
        raise VariantError(f"{where}: no file {path.resolve()}")
    spec = importlib.util.spec_from_file_location(f"_simkit_variant_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    with _first_on_path(path.resolve().parent):
        _imported(lambda: spec.loader.exec_module(module), source, where)
    return module


def _import(module_name: str, name: str, where: str, source: str) -> ModuleType:
    """Import from the current directory first, then from the installed packages."""
    with _first_on_path(Path.cwd()):
        module = _imported(lambda: importlib.import_module(module_name), module_name, where)
    if module is not None:
        return module
    file = module_name.replace(".", "/") + ".py"
    fix = {
        "reproducer": "run simkit replay from the folder simkit fuzz ran in, or set the "
        f"reproducer's \"variant\" to the file's path (path/to/{file}:{name})",
        "option": f"run simkit from the folder that holds {file}, or give the file's path: "
        f"--variant path/to/{file}:{name}",
        "file": f"give the file's path, relative to this file (path/to/{file}:{name})",
    }[source]
    raise VariantError(
        f"{where}: no module {module_name} in the current directory ({Path.cwd()}) "
        f"or among the installed packages; {fix}"
    )


def _imported(load, source: str, where: str) -> ModuleType | None:
    """Run an import: None when ``source`` itself (or its package) does not exist; a
    module that fails to import becomes a one-line error (its own file and line for a
    syntax error)."""
    try:
        return load()
    except VariantError as exc:  # a Variant the module builds is broken: say which, as is
        raise VariantError(f"{where}: {exc}") from None
    except ModuleNotFoundError as exc:
        if exc.name is not None and (source + ".").startswith(exc.name + "."):
            return None
        raise VariantError(f"{where}: importing {source} failed: {exc}") from None
    except SyntaxError as exc:
        raise VariantError(
            f"{where}: {exc.filename}:{exc.lineno}: syntax error: {exc.msg}"
        ) from None
    except Exception as exc:
        raise VariantError(
            f"{where}: importing {source} failed: {type(exc).__name__}: {exc}"
        ) from None


@contextlib.contextmanager
def _first_on_path(folder: Path):
    """Put a folder first on sys.path for the length of an import."""
    importlib.invalidate_caches()  # a file written since the last import is seen
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))
