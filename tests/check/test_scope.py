"""Scope files (``simkit.check.scope``): the default loads; a bad one is refused with
the file and the key named, before anything runs."""

import pytest

from simkit.check.scope import DEFAULT, ScopeError, load_scope, parse_scope

WORLD = "[world]\nseed = 1\n"


def test_the_default_scope_crosses_every_fault_family_and_is_closed_under_its_symmetry():
    scope = load_scope(DEFAULT)
    rules = {step.RULE for step in scope.alphabet}
    assert {"write", "burst", "crash", "partition", "jump", "errors", "relay-crash", "rotate",
            "revoke", "link", "interrupt", "adversary", "forge"} <= rules  # fmt: skip
    assert scope.symmetric == (("b1", "b2"),)
    assert sorted(s.count for s in scope.alphabet if s.RULE == "burst") == [2, 3, 4]  # the edge
    assert scope.params.relay["max_ops_per_push"] == 3


def test_a_list_valued_field_is_a_cross_product():
    scope = parse_scope(WORLD + '[[steps]]\nrule = "write"\ndevice = ["a1", "b1"]\n'
                        'graph = "g:team"\nrecord = ["r0", "r1"]\n', "s.toml")  # fmt: skip
    assert [(s.device, s.record) for s in scope.alphabet] == [
        ("a1", "r0"), ("a1", "r1"), ("b1", "r0"), ("b1", "r1")]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("x = 1\n" + WORLD, "s.toml: unknown key 'x'"),
        ("[steps]\n", "s.toml: [world] must be a table"),
        ('[world]\nseed = -1\n[[steps]]\nrule = "heal"\n', "s.toml: [world]: world.seed"),
        ('[world]\nseed = 1\nmembers = 3\n[[steps]]\nrule = "heal"\n', "unknown key world.members"),
        ('[world]\nmax_offset_ms = 0\n[[steps]]\nrule = "heal"\n', "missing key world.seed"),
        ('[world]\nseed = 1\npartial = "x"\n[[steps]]\nrule = "heal"\n', "world.partial must be"),
        (
            '[world]\nseed = 1\nrelay = {log_keep = "x"}\n[[steps]]\nrule = "heal"\n',
            "world.relay.log_keep must be a positive integer",
        ),
        (WORLD, "s.toml: [[steps]] must list at least one step"),
        (WORLD + '[[steps]]\nrule = "wirte"\n', "s.toml: steps[0]: unknown rule 'wirte'"),
        (WORLD + '[[steps]]\nrule = "crash"\ndevice = "z9"\n', "device 'z9' does not exist"),
        (WORLD + '[[steps]]\nrule = "heal"\n[[steps]]\nrule = "heal"\n', "listed twice"),
        (
            'symmetric = [["b1", "b2"]]\n' + WORLD + '[[steps]]\nrule = "crash"\ndevice = "b1"\n',
            "swapping b1 and b2 turns",
        ),
        ('symmetric = ["b1"]\n' + WORLD + '[[steps]]\nrule = "heal"\n', "lists of two or more"),
        ("[world\n", "s.toml: not TOML"),
        (
            WORLD + '[[steps]]\nrule = "adversary"\nmode = "substitute-keys"\ntargets = [["a1"]]\n',
            "params.victim must name the device",
        ),
    ],
)
def test_a_bad_scope_is_refused_naming_the_file_and_the_key(text, says):
    with pytest.raises(ScopeError, match=says.replace("[", r"\[").replace("]", r"\]")):
        parse_scope(text, "s.toml")


def test_a_missing_scope_file_is_named(tmp_path):
    with pytest.raises(ScopeError, match=r"nope\.toml: cannot read"):
        load_scope(tmp_path / "nope.toml")
