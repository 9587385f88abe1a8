"""base64url, safe IDs and storage keys (spec: Graph identifiers and storage keys)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simkit.errors import EncodingError, UnsafeIdError
from simkit.protocol import b64url_decode, b64url_encode, is_safe_id, storage_key


@given(st.binary())
def test_b64url_round_trips_unpadded(data):
    text = b64url_encode(data)
    assert "=" not in text
    assert b64url_decode(text) == data


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("QQ==", "only"),
        ("QQ=", "only"),
        ("a+b/", "only"),
        ("ab cd", "only"),
        ("A", "impossible length"),
        ("QR", "trailing bits"),
    ],
)
def test_b64url_decode_refuses_padding_foreign_characters_and_noncanonical_input(text, reason):
    with pytest.raises(EncodingError, match=reason):
        b64url_decode(text)


def test_b64url_decode_refuses_non_strings():
    with pytest.raises(EncodingError, match="must be a string"):
        b64url_decode(b"QQ")


@pytest.mark.parametrize("good", ["a", "A-z_0", "x" * 64])
def test_safe_id_accepts_the_pattern(good):
    assert is_safe_id(good)


@pytest.mark.parametrize("bad", ["", "x" * 65, "a:b", "a/b", "a b", "é", "a\n", None, 5])
def test_safe_id_refuses_everything_else(bad):
    assert not is_safe_id(bad)


def test_storage_key_personal_graph_names_the_caller():
    assert storage_key("u", "alice") == "u:alice"


def test_storage_key_group_graph_is_the_group():
    assert storage_key("g:team", "alice") == "g:team"


def test_storage_key_pairwise_graph_is_order_independent():
    assert storage_key("d:bob", "alice") == storage_key("d:alice", "bob") == "d:alice:bob"


@pytest.mark.parametrize(
    ("graph_id", "caller", "rule"),
    [
        ("g:a:b", "alice", "group ID"),
        ("d:bob:x", "alice", "pairwise member ID"),
        ("g:", "alice", "group ID"),
        ("x:1", "alice", "must be 'u'"),
        ("u:alice", "alice", "must be 'u'"),
        ("u", "al:ice", "caller member ID"),
        ("d:" + "b" * 65, "alice", "pairwise member ID"),
    ],
)
def test_storage_key_refuses_unsafe_ids_naming_the_rule(graph_id, caller, rule):
    with pytest.raises(UnsafeIdError, match=rule) as info:
        storage_key(graph_id, caller)
    assert isinstance(info.value, ValueError)
