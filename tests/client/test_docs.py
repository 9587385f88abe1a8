"""docs/client.md's table "Rules and the tests that prove them" stays true: every place
it names for a rule exists in ``simkit.client``, and every test it names exists under
tests/client/, so a rename or a deleted test cannot leave the table pointing nowhere."""

import ast
import importlib
import inspect
import re
from pathlib import Path

import simkit
import simkit.client
from simkit.client import device

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "client.md"
TESTS = Path(__file__).parent
PACKAGE = Path(simkit.__file__).parent
SECTION = "## Rules and the tests that prove them"
TICKED = re.compile(r"`([^`]+)`")


def rule_table() -> list[tuple[str, str, str]]:
    """The table's rows as (spec rule, where, test) cells, header and rule line left out."""
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"docs/client.md has no section {SECTION!r}"
    lines = text.split(SECTION, 1)[1].strip().splitlines()
    table = []
    for line in lines:
        if not line.startswith("|"):
            break
        table.append(line)
    assert len(table) > 2, "docs/client.md: the rule table has no rows"
    rows = []
    for line in table[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == 3, f"docs/client.md: a rule-table row without 3 cells: {line}"
        rows.append((cells[0], cells[1], cells[2]))
    return rows


def resolves(name: str) -> bool:
    """``client/x.py`` is a file under simkit/; ``module.attr`` an attribute of a module
    of simkit.client; ``Class.attr`` one of a class that simkit.client exports or
    simkit.client.device defines; a bare name is something simkit.client exports."""
    if name.endswith(".py"):
        return name.startswith("client/") and (PACKAGE / name).is_file()
    head, *rest = name.split(".")
    if not rest:
        return head in simkit.client.__all__
    if (PACKAGE / "client" / f"{head}.py").is_file():
        owner = importlib.import_module(f"simkit.client.{head}")
    elif inspect.isclass(getattr(simkit.client, head, None)):
        owner = getattr(simkit.client, head)
    elif inspect.isclass(getattr(device, head, None)):
        owner = getattr(device, head)
    else:
        return False
    for part in rest:
        if not hasattr(owner, part):
            return False
        owner = getattr(owner, part)
    return True


def defined_tests(path: Path) -> set[str]:
    """The test functions a file defines, at module level or in a class."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, functions) and node.name.startswith("test_")
    }


def test_every_place_docs_client_md_names_for_a_rule_exists():
    rows = rule_table()
    missing = []
    for rule, where, _ in rows:
        names = TICKED.findall(where)
        if not names:
            missing.append(f"{rule!r}: names no place")
        missing += [f"{rule!r}: `{name}`" for name in names if not resolves(name)]
    assert not missing, (
        "docs/client.md, rule table, Where column: these do not exist in simkit.client "
        "(write module.name, Class.method or client/x.py):\n  " + "\n  ".join(missing)
    )


def test_every_test_docs_client_md_names_for_a_rule_exists_under_tests_client():
    by_file = {path.name: defined_tests(path) for path in sorted(TESTS.glob("test_*.py"))}
    anywhere = set().union(*by_file.values())
    missing = []
    for rule, _, tests in rule_table():
        names, in_file = [], None
        for name in TICKED.findall(tests):
            if name.endswith(".py"):  # `file.py`: the names after it are in that file
                in_file = name
                if name not in by_file:
                    missing.append(f"{rule!r}: no file tests/client/{name}")
            else:
                names.append(name)
                known = by_file.get(in_file, set()) if in_file else anywhere
                if not name.startswith("test_") or name not in known:
                    missing.append(f"{rule!r}: `{name}`" + (f" in {in_file}" if in_file else ""))
        if not names:
            missing.append(f"{rule!r}: names no test")
    assert not missing, (
        "docs/client.md, rule table, Test column: no such test function under "
        "tests/client/:\n  " + "\n  ".join(missing)
    )
