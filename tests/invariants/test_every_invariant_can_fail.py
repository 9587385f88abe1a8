"""Every invariant can fail (docs/fuzzing.md): each reports, by name, the break planted
for it in ``FIRES`` (tests/invariants/firing.py), a short deterministic replay; the
protocol as specified holds on the same steps; and with the invariant switched off the
same check no longer passes, so no other invariant stands in for it."""

import re
from pathlib import Path

import pytest

import simkit.invariants
from simkit.invariants import NAMES
from tests.invariants.firing import FIRES, check_fires, violations

DOCS = Path(__file__).parents[2] / "docs" / "fuzzing.md"
SECTION = "## Every invariant can fail"
THIS = "tests/invariants/test_every_invariant_can_fail.py"


def test_the_registry_has_one_planted_break_per_invariant():
    assert set(FIRES) == set(NAMES)


@pytest.mark.parametrize("name", sorted(FIRES))
def test_each_invariant_fires_by_name_on_its_planted_break(name):
    check_fires(name)
    held = violations(FIRES[name], specified=True)
    assert not held, "the protocol as specified: " + "; ".join(str(v) for v in held)


@pytest.mark.parametrize("name", sorted(FIRES))
def test_switched_off_the_invariant_no_longer_catches_its_planted_break(name, monkeypatch):
    """The same check with ``name`` left out of the invariants every Monitor builds:
    it must fail, so the first test's pass is this invariant's doing."""
    kept = tuple(cls for cls in simkit.invariants.ALL if cls.name != name)
    assert len(kept) == len(simkit.invariants.ALL) - 1
    monkeypatch.setattr(simkit.invariants, "ALL", kept)
    with pytest.raises(AssertionError, match=f"^no {re.escape(name)} violation saying"):
        check_fires(name)


def _table() -> dict[str, list[str]]:
    """The section's rows: invariant -> its other columns."""
    text = DOCS.read_text(encoding="utf-8")
    assert SECTION in text, f"docs/fuzzing.md has no section {SECTION!r}"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        found = re.match(r"\|\s*`([^`]+)`\s*\|(.*)\|\s*$", line)
        if found:
            rows[found[1]] = [cell.strip() for cell in found[2].split("|")]
    return rows


def test_the_docs_table_cites_this_registry_for_every_invariant():
    rows = _table()
    assert set(NAMES) <= set(rows), f"no row for {sorted(set(NAMES) - set(rows))}"
    uncited = [name for name in NAMES if THIS not in rows[name][0]]
    assert not uncited, f"rows that do not cite {THIS}: {uncited}"
