"""Every dependency pyproject.toml declares has a tested floor: a ``>=`` minimum that
.ci/floors.txt pins exactly, so .ci/run's floors step installs it. A dependency added
without its pin (or a floor raised without moving the pin) fails here."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*>=\s*([^,;\s]+)$")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s#]+)$")


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _release(version: str) -> tuple:
    """``43`` and ``43.0.0`` are the same floor."""
    parts = [int(p) if p.isdigit() else p for p in version.split(".")]
    while parts and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def declared() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    floors = {}
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["test"]]:
        match = REQUIREMENT.match(requirement.strip())
        assert match, f"pyproject.toml: {requirement!r} must declare its floor as NAME>=VERSION"
        floors[_name(match[1])] = match[2]
    return floors


def pinned() -> dict[str, str]:
    pins = {}
    for line in (ROOT / ".ci" / "floors.txt").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            match = PIN.match(line)
            assert match, f".ci/floors.txt: {line!r} is not NAME==VERSION"
            pins[_name(match[1])] = match[2]
    return pins


def test_every_declared_dependency_is_pinned_at_its_floor_in_ci_floors():
    pins = pinned()
    for name, floor in sorted(declared().items()):
        assert name in pins, f".ci/floors.txt does not pin {name} (pyproject.toml: >={floor})"
        assert _release(pins[name]) == _release(floor), (
            f".ci/floors.txt pins {name}=={pins[name]}, but pyproject.toml's floor is {floor}"
        )


def test_ci_floors_pins_nothing_pyproject_does_not_declare():
    stale = sorted(set(pinned()) - set(declared()))
    assert not stale, f".ci/floors.txt pins packages pyproject.toml does not declare: {stale}"
