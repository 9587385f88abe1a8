"""``simkit mutate``'s operators: each finds its sites in the ast and replaces exactly
one span; docstrings, annotations, messages and ``# pragma: no mutate`` lines are left
alone; a draw is the seed's alone; a user's own files are mutated in a copy put first
on the import path."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from simkit.campaign.mutate import MutatePathError, draw, sources
from simkit.campaign.operators import mutants_of, sample, sites
from simkit.fuzz.mutants import mutated_copy

CODE = '''"""A docstring with < and + and "strings"."""


def f(a: int, b: int = 1) -> bool:
    """Its own docstring: not mutated."""
    if a < b and not a == 2:  # ≥ a comment with non-ASCII before nothing
        total = sorted([a, b])
        total[0] += 3
        print(a, b)  # pragma: no mutate
        raise ValueError(f"a message {a}")
    return a - b >= 0
'''


def _applied(text: str) -> dict[str, str]:
    """Each mutation's operator and the mutated line it leaves."""
    out = {}
    for start, end, new, operator, _ in sites(text):
        mutated = text[:start] + new + text[end:]
        line = mutated[: start + len(new)].count("\n")
        out.setdefault(operator, [])
        out[operator].append(mutated.splitlines()[line].strip())
        ast.parse(mutated)  # every mutant is still a program
    return out


def test_each_operator_replaces_one_span_and_leaves_a_program():
    found = _applied(CODE)
    assert (
        "if a <= b and not a == 2:  # ≥ a comment with non-ASCII before nothing"
        in found["comparison boundary"]
    )
    assert (
        "if a < b or not a == 2:  # ≥ a comment with non-ASCII before nothing"
        in found["logical and/or"]
    )
    assert (
        "if a < b and (a == 2):  # ≥ a comment with non-ASCII before nothing"
        in found["logical not removed"]
    )
    assert "return a + b >= 0" in found["arithmetic"]
    assert "total[0] -= 3" in found["arithmetic"]
    assert "return a - b < 0" in found["comparison negated"]
    assert "total = ([a, b])" in found["call removed"]
    assert "total[0] += 4" in found["constant"]
    assert found["statement removed"] == ["pass", "pass"]  # the augmented item, the raise


def test_docstrings_annotations_messages_and_pragma_lines_are_never_mutated():
    touched = {CODE[:end].count("\n") + 1 for start, end, *_ in sites(CODE)}
    assert not touched & {1, 5, 9}  # the docstrings, the pragma's line
    signature = [what for start, _, _, _, what in sites(CODE) if CODE[:start].count("\n") == 3]
    assert signature == ["1 -> 0"]  # the default, not the annotations
    assert all("message" not in new for _, _, new, *_ in sites(CODE))


def test_a_draw_is_decided_by_its_seed_and_skips_what_changes_nothing(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(CODE, encoding="utf-8")
    every = mutants_of(path, "m.py", str(tmp_path))
    one = sample(every, 5, 7, {"m.py": CODE})
    assert one == sample(every, 5, 7, {"m.py": CODE})
    assert one != sample(every, 5, 8, {"m.py": CODE})
    assert len({m.name for m in one}) == 5
    for mutant in one:
        assert ast.dump(ast.parse(mutant.patched(CODE))) != ast.dump(ast.parse(CODE))


def test_simkit_paths_name_the_installed_package_and_others_the_current_folder(tmp_path):
    (tmp_path / "proto").mkdir()
    (tmp_path / "proto" / "rules.py").write_text(CODE, encoding="utf-8")
    mine = sources(("proto",), tmp_path)
    assert [(s.name, s.root) for s in mine] == [("proto/rules.py", str(tmp_path.resolve()))]
    ours = sources(("simkit/protocol/b64.py",), tmp_path)
    assert [(s.name, s.root) for s in ours] == [("protocol/b64.py", "")]
    for bad, message in (("nowhere", "no such file"), ("..", "not under the current folder")):
        with pytest.raises(MutatePathError, match=message):
            sources((bad,), tmp_path)


def test_a_user_file_runs_mutated_from_its_copy(tmp_path):
    (tmp_path / "proto").mkdir()
    (tmp_path / "proto" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "proto" / "rules.py").write_text("LIMIT = 64\n", encoding="utf-8")
    [mutant] = draw(sources(("proto",), tmp_path), 1, 0)
    root = mutated_copy(mutant, tmp_path / "copy")
    shown = subprocess.run(
        [sys.executable, "-c", "import json, proto.rules; print(json.dumps(proto.rules.LIMIT))"],
        cwd=root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(shown.stdout) == 65
    assert (tmp_path / "proto" / "rules.py").read_text() == "LIMIT = 64\n"  # the original


def test_a_file_changed_since_the_draw_is_refused(tmp_path):
    path = Path(tmp_path / "m.py")
    path.write_text(CODE, encoding="utf-8")
    [mutant] = sample(mutants_of(path, "m.py", str(tmp_path)), 1, 0, {"m.py": CODE})
    with pytest.raises(ValueError, match="changed since it was drawn"):
        mutant.patched("\n" + CODE)


def test_a_union_in_an_annotation_is_never_mutated():
    """``str | None`` is evaluated when a function or class is defined: ``str & None``
    would crash the mutated copy at import, a mutant no run can judge."""
    code = (
        "def f(a: int | None, b: dict | None = None) -> str | None:\n"
        "    x: int | None = 1\n"
        "    return a | b\n"
        "class C:\n"
        "    fingerprint: str | None\n"
    )
    found = [(code[:start].count("\n") + 1, what) for start, _, _, _, what in sites(code)]
    assert [line for line, _ in found if "&" in _ or "|" in _] == [3]
