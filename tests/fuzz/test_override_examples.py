"""Every override point of docs/variants.md has a runnable example
(docs/examples/overrides.py), and each example's method runs when it is fuzzed."""

import importlib.util
import re
from pathlib import Path

import pytest

from simkit.client import Device
from simkit.fuzz.runner import fuzz
from simkit.relay import Relay
from simkit.sim.exercise import overridden

ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "docs" / "examples" / "overrides.py"


def examples():
    spec = importlib.util.spec_from_file_location("_simkit_doc_overrides", PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EXAMPLES


EXAMPLES = examples()


def test_every_override_point_the_docs_list_has_an_example_and_no_other():
    table = (ROOT / "docs" / "variants.md").read_text(encoding="utf-8")
    listed = {
        f"{'Relay' if on == 'relay' else 'Device'}.{name}"
        for on, name in re.findall(r"^\| `(relay|device)\.(\w+)\(", table, re.M)
    }
    assert listed == set(EXAMPLES)


@pytest.mark.parametrize("point", sorted(EXAMPLES))
def test_an_override_points_example_runs_its_method_when_fuzzed(point):
    variant = EXAMPLES[point]
    owner, name = point.split(".")
    cls, base = (variant.relay, Relay) if owner == "Relay" else (variant.device, Device)
    assert overridden(cls, base) == {name: cls}  # one method: the rule it changes
    method = f"{cls.__qualname__}.{name}"

    def until_it_ran(result) -> None:  # the next example need not run once one called it
        if result.exercise.calls[method]:
            raise KeyboardInterrupt

    for seed in (1, 2, 3, 4, 5, 6):  # 6 examples a seed: a rarely reached rule may need more
        ran = fuzz(
            variant, seconds=600, seed=seed, max_steps=25, examples=6, shrink=False,
            progress=until_it_ran,
        )  # fmt: skip
        if ran.exercise.calls[method]:
            break
    assert ran.exercise.calls[method] > 0, ran.exercise.calls
