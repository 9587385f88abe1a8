"""The spec's rules are one closed catalogue: every rule a model names is in it, every
judge and override point it lists exists, and a name is an ID or an error."""

import ast
import re
from pathlib import Path

import pytest

from simkit.client import Device
from simkit.invariants import NAMES
from simkit.model.catalogue import JUDGES, UnknownRule, catalogue, resolve
from simkit.relay import Relay
from simkit.sim.variant import Variant, VariantError

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "simkit" / "model"
# the calls through which the models name a rule, and which argument holds it
NAMING = {"find": 0, "ok": 0, "invalid": 0, "Refuse": 2, "Expected": 1, "require": 2}
TABLES = ("rule", "RULE", "SCHEMA", "PARTS", "DEVICES", "CREATED", "QUOTAS")


def _named(node: ast.expr) -> list[str]:
    """The rule IDs a literal argument names (a string, or a tuple of strings)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple):
        return [n for e in node.elts for n in _named(e)]
    if isinstance(node, ast.IfExp):
        return _named(node.body) + _named(node.orelse)
    if isinstance(node, ast.Dict):  # a table of parts and the rules deciding each
        return [n for v in node.values for n in _named(v)]
    return []


def _ruled(node: ast.expr) -> list[str]:
    """``(rules, what they say)`` pairs (simkit/model/store.py's tables): the rules."""
    if isinstance(node, ast.Tuple) and len(node.elts) == 2 and isinstance(node.elts[0], ast.Tuple):
        return _named(node.elts[0])
    if isinstance(node, ast.Dict):
        return [n for v in node.values for n in _ruled(v)]
    return _named(node)


def _names_in(folder: Path) -> set[str]:
    """Every rule ID the model code under ``folder`` names in a literal, and the IDs
    held in the variables and tables named in ``TABLES``."""
    found: set[str] = set()
    for path in folder.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", None))
                at = NAMING.get(name)
                if at is not None and len(node.args) > at:
                    found.update(_named(node.args[at]))
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id in TABLES for t in node.targets
            ):
                found.update(_ruled(node.value))
    return found


def test_every_rule_the_models_name_is_an_id_of_the_catalogue():
    relay = _names_in(MODEL) - _names_in(MODEL / "device")
    device = _names_in(MODEL / "device")
    assert len(relay) > 40 and len(device) > 25  # the scan sees the models' rules
    unknown = sorted((relay | device) - set(catalogue()))
    assert unknown == []
    # what the catalogue says judges each rule includes the model that names it
    assert [r for r in sorted(device) if "device-model" not in catalogue()[r].judged_by] == []
    relay_named = {r for r in relay if "relay-model" not in catalogue()[r].judged_by}
    assert sorted(relay_named) == []


def test_every_judge_and_every_place_a_rule_is_made_exists():
    judges = set(NAMES) | set(JUDGES)
    for rule in catalogue().values():
        assert rule.text and rule.section and rule.judged_by and rule.made_by, rule.id
        assert set(rule.judged_by) <= judges, (rule.id, rule.judged_by)
        for where in rule.made_by:
            owner, _, method = where.partition(".")
            if owner in ("Relay", "Device"):
                assert callable(getattr(Relay if owner == "Relay" else Device, method)), where
            else:
                assert (ROOT / where).is_file(), (rule.id, where)


def test_every_override_point_the_docs_list_makes_a_rule_of_the_catalogue():
    table = (ROOT / "docs" / "variants.md").read_text(encoding="utf-8")
    listed = {
        f"{'Relay' if on == 'relay' else 'Device'}.{name}"
        for on, name in re.findall(r"^\| `(relay|device)\.(\w+)\(", table, re.M)
    }
    made = {point for rule in catalogue().values() for point in rule.override_points}
    assert listed and sorted(listed - made) == []


def test_the_catalogue_holds_the_spec_s_numbered_rules():
    ids = set(catalogue())
    for noun, count in (("push", 4), ("client", 14), ("rotation", 6)):
        assert {f"{noun} rule {n}" for n in range(1, count + 1)} <= ids
        assert f"{noun} rule {count + 1}" not in ids
    assert {f"pipeline step {n}" for n in range(1, 8)} <= ids
    assert {"log check 1", "log check 2", "events rule 1", "versioning rule 3"} <= ids


def test_a_name_resolves_to_its_id_in_any_case_and_spacing():
    assert resolve("push rule 3") == "push rule 3"
    assert resolve("  Client   Rule 14 ") == "client rule 14"
    assert resolve("keys: grant") == "keys: grant"


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("rule", "nearest"),
        ("push rule 9", "'push rule 4'"),
        ("push rule", "start of 4: 'push rule 1', 'push rule 2', 'push rule 3', 'push rule 4'"),
        ("client rule 1 ", None),  # an ID, spaced: no error
        ("rotationRequired", "nearest"),
        ("", "ID"),
    ],
)
def test_an_unknown_or_ambiguous_name_is_an_error_naming_the_nearest_ids(name, says):
    if says is None:
        assert resolve(name) == "client rule 1"
        return
    with pytest.raises(UnknownRule) as raised:
        resolve(name)
    assert says in str(raised.value)


def test_a_variant_declares_ids_and_one_name_alone_is_one_rule():
    assert Variant("v", "one rule", changes="Push Rule 1").changes == ("push rule 1",)
    assert Variant("v", "two", changes=["client rule 2", "client rule 2"]).changes == (
        "client rule 2",
    )
    with pytest.raises(VariantError, match="'push rule 9' is no rule"):
        Variant("v", "a rule the spec lacks", changes=("push rule 9",))
    with pytest.raises(VariantError, match="start of"):
        Variant("v", "a loose name", changes=("push rule",))


def test_a_variant_class_that_overrides_nothing_of_its_base_is_refused_as_it_is_built():
    class Misspelt(Device):
        def chekc(self, op, storage_key_, key, roster):
            return None

    class Empty(Relay):
        pass

    with pytest.raises(VariantError, match=r"chekc \(did you mean check\?\)"):
        Variant("v", "a misspelt override", device=Misspelt)
    with pytest.raises(VariantError, match="defines no method"):
        Variant("v", "nothing", relay=Empty)
