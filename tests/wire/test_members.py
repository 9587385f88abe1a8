"""The members file: the directory and bearer tokens ``simkit serve`` reads; a mistake in
it is one line naming the file and the key, exit 2."""

import pytest
from click.testing import CliRunner

from simkit.cli import main
from simkit.errors import InputError
from simkit.relay import Identity, Request
from simkit.wire.members import TokenHost, load_directory

GOOD = """
members = ["alice", "bob", "dave"]
inactive = ["dave"]
[groups]
team = ["alice", "bob", "dave"]
[capabilities.team]
bob = ["write"]
[tokens]
"tok-a1" = { member = "alice", device = "a1" }
"""


def host(tmp_path, text: str = GOOD) -> TokenHost:
    path = tmp_path / "members.toml"
    path.write_text(text)
    return TokenHost(load_directory(path))


def authenticate(host: TokenHost, authorization: str | None) -> Identity | None:
    headers = {} if authorization is None else {"Authorization": authorization}
    return host.authenticate(Request("GET", "/devices", headers=headers))


def test_members_file_gives_the_directory_groups_capabilities_and_activity(tmp_path):
    h = host(tmp_path)
    assert h.is_member("dave") and not h.is_active("dave") and h.is_active("alice")
    assert list(h.group_members("team")) == ["alice", "bob", "dave"]
    assert h.capabilities("bob", "team") == ["write"]
    assert h.capabilities("alice", "team") is None  # not listed: everything


@pytest.mark.parametrize(
    "authorization, identity",
    [("Bearer tok-a1", Identity("alice", "a1")), ("bearer tok-a1", Identity("alice", "a1")),
     ("Bearer tok-a2", None), ("Basic tok-a1", None), ("tok-a1", None), (None, None),
     ("Bearer ", None), ("Bearer tok a1", None)],
)  # fmt: skip
def test_token_host_authenticates_a_listed_bearer_token_and_nothing_else(
    tmp_path, authorization, identity
):
    assert authenticate(host(tmp_path), authorization) == identity


@pytest.mark.parametrize(
    "text, where",
    [
        ("members = [", "not valid TOML"),
        ('members = "alice"', "members: expected a list of non-empty strings"),
        ("colour = 1", "colour: unknown key"),
        ('members = ["a"]\n[groups]\nteam = ["b"]', "groups.team: 'b' is not listed in members"),
        ('members = ["a"]\ninactive = ["b"]', "inactive: 'b' is not listed in members"),
        ('members = ["a"]\n[capabilities.team]\na = []', "capabilities.team: not a group"),
        ('members = ["a"]\n[groups]\nt = ["a"]\n[capabilities.t]\na = ["fly"]',
         "capabilities.t.a: expected a list of capabilities"),
        ('[tokens]\n"x y" = { member = "a", device = "d" }', "tokens.'x y': a token must match"),
        ('[tokens]\nt = { member = "a" }', "tokens.'t': expected { member"),
    ],
)  # fmt: skip
def test_members_file_mistake_is_one_line_naming_the_file_and_key(tmp_path, text, where):
    path = tmp_path / "members.toml"
    path.write_text(text)
    with pytest.raises(InputError) as raised:
        load_directory(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: ") and where in message and "\n" not in message


def test_serve_with_a_bad_members_file_exits_2_with_one_line(tmp_path):
    path = tmp_path / "members.toml"
    path.write_text('members = ["a"]\ninactive = ["b"]\n')
    result = CliRunner().invoke(main, ["serve", "--members", str(path), "--port", "0"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"Error: {path}: inactive: 'b' is not listed in members"
    ]


def test_serve_with_a_missing_members_file_exits_2(tmp_path):
    result = CliRunner().invoke(main, ["serve", "--members", str(tmp_path / "none.toml")])
    assert result.exit_code == 2 and "no such members file" in result.output
