"""Broken scenario files, generated: Hypothesis mutates the library's files (drops a
line, changes a value, misspells a key, swaps a name, adds a scheduled action) and
each result either loads or is refused with one line naming the file and the key.
A file that loads must run: the loader is the only gate, so what it lets through
must never crash the world.

Running every mutant at full length would take minutes, so a mutant that loads runs
shortened: until 5 s after its last scheduled action (so every action fires), with
at most 20 s of drain and a writer every 5 s at most. That changes how much work the
run does, not which actions, names and numbers it uses, which is what can crash it.
"""

import re
from pathlib import Path

import attrs
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from simkit.scenario.actions import ACTIONS
from simkit.scenario.load import ScenarioError, load_scenario
from simkit.scenario.run import run_scenario
from simkit.sim.adversary import MODES

LIBRARY = sorted(Path("scenarios").glob("*.toml"))
TEXTS = {path.name: path.read_text() for path in LIBRARY}
NAMES = ["a1", "a2", "a3", "b1", "b2", "c1", "zed", "alice", "bob", "carol", "team", "g:team",
         "u:alice", "u:zed", "d:alice:bob"]  # fmt: skip
VALUES = [
    "-10", "0", "0.0", "1e9", "-1", "0.05", "0.5", "3", "1", "60", "400", "nan", "inf", "true",
    '""', '"zed"', '"a1"', '"b1"', '"g:team"', '"u:zed"', "[]", '["zed"]', '["a1"]', "{}",
    '"partition"', '"revoke"', '"rotate"', '"fork"', '"1"', "[1, 2]", '{ victim = "a1" }',
]  # fmt: skip
KEY_LINE = re.compile(r"^(\s*)([\w.-]+)(\s*=\s*)(.*)$")


def _lines_with_keys(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if KEY_LINE.match(line)]


FIELD_VALUES = {
    "by": ['"a1"', '"a2"', '"b1"', '"c1"', '"a3"', '"zed"'],
    "device": ['"a1"', '"a2"', '"b1"', '"b2"', '"a3"', '"a9"', '"zed"'],
    "source": ['"a1"', '"b1"', '"zed"'],
    "devices": ['["b1"]', '["a1", "c1"]', '["a3"]', '["zed"]', "[]"],
    "targets": ['["b1"]', "[]", '["a2", "b2"]', '["zed"]'],
    "member": ['"alice"', '"bob"', '"carol"', '"zed"'],
    "graph": ['"g:team"', '"u:alice"', '"u:bob"', '"d:alice:bob"', '"g:zed"'],
    "group": ['"team"', '"zed"'],
    "until": ["10", "40", "100", "1"],
    "status": ["503", "429", "500", "200"],
    "route": ['"GET /graphs/:gid/devices"', '"POST /graphs/:gid/keys"', '"GET /nowhere"', "5"],
    "step_ms": ["3600000", "-3600000", "0"],
    "restart_after": ["0", "1", "20", "-1"],
    "mode": [f'"{mode}"' for mode in MODES] + ['"nice"'],
    "self_sig": ["true", "false", "1"],
    "malformed": ['"SealedBox.v absent"', '"SealedBox unknown-member"', '"v absent"', "2"],
    "target": ['"relay"', '"a1"', '"b2"', '"a3"', '"zed"', "1"],
    "params": ["{}", '{ victim = "a1" }', '{ merge_at = 200 }', '{ snapshot_at = 0 }',
               '{ log = "hides" }', '{ fraction = 0.5 }', '{ by = 2 }', '{ into = "graph" }'],
}  # fmt: skip


@st.composite
def schedule_entry(draw) -> list[str]:
    """A ``[[schedule]]`` entry: an action with its own keys (sometimes missing one,
    sometimes a stray) and values that name things that may or may not exist."""
    action = draw(st.sampled_from(list(ACTIONS)))
    keys = [f.name for f in attrs.fields(ACTIONS[action]) if f.name != "at"]
    keys = [k for k in keys if draw(st.integers(0, 9)) > 0]  # now and then one is missing
    if draw(st.integers(0, 9)) == 0:
        keys.append(draw(st.sampled_from(sorted(FIELD_VALUES))))  # a stray key
    body = [f"at = {draw(st.sampled_from(['0', '5', '30', '61', '90', '-1']))}"]
    body.append(f'action = "{action}"')
    body += [f"{k} = {draw(st.sampled_from(FIELD_VALUES[k]))}" for k in dict.fromkeys(keys)]
    return ["", "[[schedule]]", *body, ""]


@st.composite
def mutation(draw, text: str) -> str:
    lines = text.splitlines()
    keyed = _lines_with_keys(lines)
    kind = draw(st.sampled_from(["drop", "value", "key", "name", "schedule", "schedule", "copy"]))
    if kind == "schedule" or not keyed:
        return "\n".join([*lines, *draw(schedule_entry())])
    i = draw(st.sampled_from(keyed))
    indent, key, eq, value = KEY_LINE.match(lines[i]).groups()
    if kind == "drop":
        del lines[i]
    elif kind == "value":
        lines[i] = indent + key + eq + draw(st.sampled_from(VALUES))
    elif kind == "key":
        cut = draw(st.integers(0, len(key) - 1))
        lines[i] = indent + key[:cut] + key[cut + 1 :] + eq + value
    elif kind == "name":
        old, new = draw(st.sampled_from(NAMES)), draw(st.sampled_from(NAMES))
        lines[i] = indent + key + eq + value.replace(f'"{old}"', f'"{new}"')
    else:
        lines.insert(i, lines[i])
    return "\n".join(lines) + "\n"


@st.composite
def mutant(draw) -> tuple[str, str]:
    name = draw(st.sampled_from(sorted(TEXTS)))
    text = TEXTS[name]
    for _ in range(draw(st.integers(1, 3))):
        text = draw(mutation(text))
    return name, text


def _load(tmp_path_factory, name: str, text: str):
    path = tmp_path_factory.mktemp("mutant") / name
    path.write_text(text)
    try:
        return path, load_scenario(path)
    except ScenarioError as exc:
        message = str(exc)
        assert message.startswith(str(path)) and "\n" not in message, message
        assert re.match(rf"{re.escape(str(path))}(:\d+)?: \S", message), message
        return path, None


@settings(max_examples=400)
@given(mutant())
def test_a_mutated_library_file_loads_or_names_its_mistake(tmp_path_factory, case):
    _load(tmp_path_factory, *case)


def shortened(scenario):
    """The same actions and names, less work (see the module docstring)."""
    spec = scenario.spec
    last = max((a.at for a in spec.schedule), default=0.0)
    workload = attrs.evolve(spec.workload, interval_s=max(spec.workload.interval_s, 5.0))
    spec = attrs.evolve(
        spec,
        duration_s=min(spec.duration_s, last + 5),
        drain_s=min(spec.drain_s, 20.0),
        workload=workload,
    )
    return attrs.evolve(scenario, spec=spec)


@st.composite
def scheduled(draw) -> tuple[str, str]:
    """A library file with one or two more scheduled actions: what the run must survive."""
    name = draw(st.sampled_from(sorted(TEXTS)))
    entries = draw(st.lists(schedule_entry(), min_size=1, max_size=2))
    return name, "\n".join([TEXTS[name], *(line for entry in entries for line in entry)])


@settings(max_examples=20, suppress_health_check=[HealthCheck.filter_too_much])
@given(scheduled())
def test_a_library_file_with_more_actions_that_loads_runs(tmp_path_factory, case):
    _, scenario = _load(tmp_path_factory, *case)
    assume(scenario is not None)
    result = run_scenario(shortened(scenario))
    assert result.world.drained, "the run ended before its quiescence check"
    for check in result.invariants:  # each invariant held, broke, or says why it did not run
        assert check.checked or check.note, check
