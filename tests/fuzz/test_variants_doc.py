"""docs/variants.md's example runs as written, from the folder a user would run it
in; variant references resolve as that page says, and a wrong one is a one-line
error that says what to do."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from simkit.fuzz.reproducer import Reproducer
from simkit.fuzz.steps import WorldParams
from simkit.sim.variant import VariantError
from simkit.sim.variants import load_variant

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "variants.md"


def doc_example() -> tuple[str, str, list[list[str]]]:
    """The example's file name (its first line, ``# my_change.py``), its code, and
    the shell commands that follow it, split into words."""
    text = DOC.read_text(encoding="utf-8")
    code = re.search(r"```python\n# (\S+\.py)\n(.*?)```", text, re.S)
    shell = re.search(r"```sh\n(.*?)```", text, re.S)
    commands = [shlex.split(line) for line in shell.group(1).splitlines() if line.strip()]
    return code.group(1), code.group(2), commands


def simkit(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run ``simkit ARGS`` as the installed command would: the current directory is
    not on sys.path (``-P``); only the worktree is, for the simkit package."""
    assert args[0] == "simkit"
    return subprocess.run(
        [sys.executable, "-P", "-m", "simkit.cli", *args[1:]],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=900,  # a guard against a hang, not a measured budget
    )


def test_the_variants_doc_example_runs_as_written_from_the_folder_holding_the_module(tmp_path):
    name, code, (fuzz, replay) = doc_example()
    (tmp_path / name).write_text(code, encoding="utf-8")
    assert fuzz[:2] == ["simkit", "fuzz"] and "--time" in fuzz
    # the additions: shrinking's own short budget keeps the test quick, and one seed on
    # one worker makes the run the same every time (a drawn seed, or the first of two
    # workers to find something, may find another consequence of the change first)
    caught = simkit([*fuzz, "--shrink-time", "2", "--seed", "1", "--workers", "1"], tmp_path)
    assert caught.returncode == 1, caught.stdout + caught.stderr
    assert "VIOLATION caused by the change" in caught.stdout
    assert "reproducer written" in caught.stdout
    broke = re.search(r"^\s*\[([\w-]+)\]", caught.stdout, re.M).group(1)
    replayed = simkit(replay, cwd=tmp_path)
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr
    assert "trace-hash:" in replayed.stdout and f"[{broke}]" in replayed.stdout


def test_the_doc_example_elsewhere_fails_with_what_to_do(tmp_path):
    _, _, (fuzz, _) = doc_example()
    missed = simkit(fuzz, cwd=tmp_path)
    assert missed.returncode != 0 and "Traceback" not in missed.stderr
    message = missed.stderr.strip().splitlines()[-1]
    assert "--variant my_change:last_of_equals: no module my_change" in message
    assert "run simkit from the folder that holds my_change.py" in message
    assert "--variant path/to/my_change.py:last_of_equals" in message


@pytest.fixture
def change(tmp_path, monkeypatch):
    """A variant module (with a name no other test imports) in a folder of its own,
    next to a helper module it imports; the current directory is elsewhere."""
    module = f"change_{tmp_path.name.replace('-', '_')}"
    folder = tmp_path / "changes"
    folder.mkdir()
    (folder / "helper_rule.py").write_text("def wins(stored, op):\n    return op >= stored\n")
    (folder / f"{module}.py").write_text(
        "from helper_rule import wins\n"
        "from simkit.relay import Relay\n"
        "from simkit.sim.variant import Variant\n\n\n"
        "class Last(Relay):\n"
        "    def _wins(self, stored_rev, op_rev):\n"
        "        return wins(stored_rev, op_rev)\n\n\n"
        'last = Variant("last", "keeps the last of equal revs", relay=Last)\n'
        "not_a_variant = Last\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return folder, module


def test_a_module_variant_is_imported_from_the_current_directory_first(change, monkeypatch):
    folder, module = change
    monkeypatch.chdir(folder)
    assert load_variant(f"{module}:last").name == "last"
    assert str(folder) not in sys.path  # the import left sys.path as it was


def test_a_file_variant_loads_from_any_directory_with_its_neighbours(change):
    folder, module = change
    assert load_variant(f"../changes/{module}.py:last").name == "last"
    assert load_variant(f"{folder}/{module}.py:last").name == "last"


def test_a_reproducer_stores_a_file_variant_relative_to_itself(change, tmp_path, monkeypatch):
    _, module = change
    ref = f"../changes/{module}.py:last"  # as typed in tmp_path/elsewhere
    repro = Reproducer("honest", WorldParams(1, "observe"), (), variant=ref)
    repro.write(tmp_path / "repro.json")
    assert f'"variant": "changes/{module}.py:last"' in (tmp_path / "repro.json").read_text()
    monkeypatch.chdir("/")
    loaded = Reproducer.load(tmp_path / "repro.json")
    assert load_variant(loaded.variant, loaded.origin).name == "last"


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("nowhere_module_xyz:last", "run simkit from the folder that holds nowhere_module_xyz.py"),
        (
            "../changes/{module}.py:lost",
            "has no Variant named 'lost' (the Variants it defines: last)",
        ),
        ("../changes/{module}.py:not_a_variant", "is a class, not a Variant; wrap it"),
        ("../changes/{module}:last", "a file path must end in .py"),
        ("../changes/missing.py:last", "no file"),
        ("{module}", "expected MODULE:NAME or PATH.py:NAME"),
    ],
    ids=["no-module", "no-name", "not-a-variant", "path-without-py", "no-file", "no-name-part"],
)
def test_a_wrong_variant_option_is_one_line_naming_the_option(change, ref, says):
    _, module = change
    ref = ref.format(module=module)
    with pytest.raises(VariantError) as caught:
        load_variant(ref)
    message = str(caught.value)
    assert message.startswith(f"--variant {ref}: ") and says in message
    assert "\n" not in message


def test_a_broken_variant_module_names_its_own_error(change):
    folder, _ = change
    (folder / "broken_syntax.py").write_text("x = (\n")
    (folder / "broken_import.py").write_text("import no_such_dependency_xyz\n")
    with pytest.raises(VariantError, match=r"broken_syntax\.py:1: syntax error"):
        load_variant("../changes/broken_syntax.py:x")
    with pytest.raises(VariantError, match="No module named 'no_such_dependency_xyz'"):
        load_variant("../changes/broken_import.py:x")


def test_a_reproducer_variant_that_is_not_found_names_the_field_and_where_to_replay(tmp_path):
    repro = Reproducer("honest", WorldParams(1, "observe"), (), variant="gone_module_xyz:last")
    repro.write(tmp_path / "repro.json")
    loaded = Reproducer.load(tmp_path / "repro.json")
    with pytest.raises(VariantError) as caught:
        load_variant(loaded.variant, loaded.origin)
    message = str(caught.value)
    assert f'{tmp_path / "repro.json"}: "variant" gone_module_xyz:last' in message
    assert "run simkit replay from the folder simkit fuzz ran in" in message
    assert "--variant" not in message
