"""The house rules of ARCHITECTURE.md, read from the source: imports flow down the
layers, the models stay independent of what they judge, and only ``simkit.realtime``
reads a real clock or real randomness (determinism rule 1)."""

import ast
from pathlib import Path

import networkx as nx

import simkit

PACKAGE = Path(simkit.__file__).parent

# ARCHITECTURE.md, "Layers": data and imports flow down this list, never up.
LAYERS = (
    "protocol", "relay", "client", "model", "sim", "invariants", "fuzz", "check", "scenario",
    "report", "campaign", "wire", "bench", "cli",
)  # fmt: skip
# Modules below every layer, importable from anywhere: errors, real time and entropy,
# Ctrl-C handling, the package's version.
LEAVES = ("errors", "realtime", "ctrl_c", "__init__")
# The protocol's test vectors compute protocol constructions only.
PLACED = {"vectors": "protocol"}

# Reads of a real clock or of real randomness (module, attribute).
REAL_READS = (
    {
        ("time", name)
        for name in (
            "time",
            "time_ns",
            "monotonic",
            "monotonic_ns",
            "perf_counter",
            "perf_counter_ns",
            "process_time",
            "process_time_ns",
            "thread_time",
            "clock_gettime",
        )
    }
    | {("os", "urandom"), ("os", "getrandom"), ("uuid", "uuid1"), ("uuid", "uuid4")}
    | {
        ("random", name)
        for name in (
            "random",
            "randint",
            "randrange",
            "choice",
            "choices",
            "shuffle",
            "sample",
            "seed",
            "uniform",
            "getrandbits",
            "randbytes",
            "gauss",
        )
    }
    | {("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"), ("date", "today")}
)
REAL_MODULES = ("secrets",)


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        yield relative, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _layer(relative: Path) -> str:
    top = relative.parts[0].removesuffix(".py")
    return PLACED.get(top, top)


def _imports(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module, tuple(alias.name for alias in node.names)


def test_imports_flow_down_the_layers_of_architecture_md():
    upward = []
    for relative, tree in _modules():
        layer = _layer(relative)
        for line, module, _ in _imports(tree):
            parts = module.split(".")
            if parts[0] != "simkit" or len(parts) < 2:
                continue
            target = PLACED.get(parts[1], parts[1])
            if layer in LEAVES:
                if target not in ("errors", "realtime"):
                    upward.append(f"simkit/{relative}:{line} (a leaf) imports {module}")
            elif target not in LEAVES and LAYERS.index(target) > LAYERS.index(layer):
                upward.append(f"simkit/{relative}:{line} ({layer}) imports {module}")
    assert upward == []


def test_every_package_of_simkit_is_placed_in_a_layer():
    tops = {_layer(relative) for relative, _ in _modules()}
    assert tops <= set(LAYERS) | set(LEAVES)


def test_a_model_never_imports_the_code_it_judges():
    """docs/model.md: a model shares only the protocol's constructions and the wire
    vocabulary (``simkit.protocol``: requests and responses, the host's seams, the
    settings) with the relay and the client; nothing from either."""
    leaks = []
    for relative, tree in _modules():
        if relative.parts[0] != "model":
            continue
        for line, module, _ in _imports(tree):
            if module.split(".")[:2] in (["simkit", "relay"], ["simkit", "client"]):
                leaks.append(f"simkit/{relative}:{line} imports {module}")
    assert leaks == []


def _real_reads(tree: ast.AST):
    """(line, what) for every call reading a real clock or real randomness, and every
    import of such a function or module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
            if (name, node.func.attr) in REAL_READS:
                yield node.lineno, f"{name}.{node.func.attr}()"
    for line, module, names in _imports(tree):
        if module in REAL_MODULES:
            yield line, f"import {module}"
        for name in names:
            if (module.rpartition(".")[2], name) in REAL_READS:
                yield line, f"from {module} import {name}"


def test_no_real_clock_or_entropy_is_read_outside_simkit_realtime():
    """Determinism rule 1: a run is a pure function of its seed; the real defaults
    come from one module."""
    found = [
        f"simkit/{relative}:{line}: {what}"
        for relative, tree in _modules()
        if relative != Path("realtime.py")
        for line, what in _real_reads(tree)
    ]
    assert found == []


def test_the_realtime_module_reads_real_time_and_entropy():
    """The check above can see a read: it finds the ones the real defaults make."""
    tree = ast.parse((PACKAGE / "realtime.py").read_text(encoding="utf-8"))
    assert {what for _, what in _real_reads(tree)} == {
        "time.perf_counter()",
        "time.time_ns()",
        "os.urandom()",
    }


def _module_name(relative: Path) -> str:
    parts = ["simkit", *relative.with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_two_modules_import_each_other_even_through_others():
    """A circle of imports (deferred or for type hints included) means two rooms that
    cannot be read apart; a package's ``__init__`` re-exporting its own modules is not
    one (the package is its modules' front door)."""
    names = {_module_name(relative) for relative, _ in _modules()}
    graph = nx.DiGraph()
    for relative, tree in _modules():
        if relative.name == "__init__.py":
            continue  # a front door: it imports its rooms, they never need it
        source = _module_name(relative)
        for _, module, imported in _imports(tree):
            targets = [f"{module}.{name}" for name in imported if f"{module}.{name}" in names]
            for target in targets or ([module] if module in names else []):
                if target != source:
                    graph.add_edge(source, target)
    assert sorted(sorted(cycle) for cycle in nx.simple_cycles(graph)) == []


def test_no_module_over_600_lines_and_no_class_over_450():
    """The house's rooms stay small enough for a newcomer to hold (the developers'
    guide): a module that outgrows this is split by what its parts are about."""
    big = []
    for relative, tree in _modules():
        lines = (PACKAGE / relative).read_text(encoding="utf-8").count("\n")
        if lines > 600:
            big.append(f"simkit/{relative}: {lines} lines")
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > 450:
                big.append(f"simkit/{relative}: class {node.name} over 450 lines")
    assert big == []
