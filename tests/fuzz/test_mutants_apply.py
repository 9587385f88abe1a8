"""Every source mutant still applies to the current code, so none rots silently: its
snippet occurs exactly once in its file and the mutated file still compiles."""

from pathlib import Path

import pytest

import simkit
from tests.fuzz.mutants import ALL, CLIENT, EQUIVALENT, RELAY

PACKAGE = Path(simkit.__file__).parent


@pytest.mark.parametrize("mutant", ALL + EQUIVALENT, ids=[m.name for m in ALL + EQUIVALENT])
def test_mutant_snippet_occurs_once_and_the_mutated_file_compiles(mutant):
    source = (PACKAGE / mutant.path).read_text(encoding="utf-8")
    mutated = mutant.patched(source)
    assert mutated != source
    compile(mutated, str(PACKAGE / mutant.path), "exec")


def test_mutants_have_distinct_names_and_quote_a_rule():
    names = [m.name for m in ALL + EQUIVALENT]
    assert len(set(names)) == len(names)
    assert not [(a, b) for a in names for b in names if b.startswith(f"{a}-")]  # files: NAME-*
    assert all(m.rule.strip() for m in ALL)


ROUTE_MODULES = ("devices.py", "records.py", "keys.py", "blobs.py", "core.py", "schema.py")
CLIENT_MODULES = (
    "sync.py", "keyops.py", "receive.py", "device.py", "logverify.py", "approval.py",
    "transport.py",
)  # fmt: skip


def test_mutants_reach_every_relay_route_module_and_client_rule_module():
    relay = {Path(m.path).name for m in RELAY if m.path.startswith("relay/")}
    client = {Path(m.path).name for m in CLIENT if m.path.startswith("client/")}
    assert set(ROUTE_MODULES) <= relay
    assert set(CLIENT_MODULES) <= client
