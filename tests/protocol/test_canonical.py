"""canonicalJson's JavaScript forms (the Node interop tests prove the general case)."""

import pytest
from hypothesis import given

from simkit.errors import EncodingError
from simkit.protocol import canonical_json, parse_json
from tests.strategies import json_values


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (5e-7, "5e-7"),
        (1.5e-6, "0.0000015"),
        (0.1 + 0.2, "0.30000000000000004"),
        (float("nan"), "null"),
        (float("-inf"), "null"),
        (2**53 + 1, "9007199254740992"),
        (10**400, "null"),
        (True, "true"),
    ],
)
def test_numbers_render_as_ecmascript_number_to_string(value, text):
    assert canonical_json(value) == text.encode()


def test_keys_sort_by_utf16_code_units_with_integer_keys_first():
    value = {"b": 1, "a": 2, "10": 3, "9": 4, "01": 5, "\uffff": 6, "\U0001f600": 7}
    assert canonical_json(value).decode() == '{"9":4,"10":3,"01":5,"a":2,"b":1,"😀":7,"\uffff":6}'


def test_strings_escape_like_json_stringify():
    assert canonical_json('\x1f\n"\\\u2028é') == b'"\\u001f\\n\\"\\\\\xe2\x80\xa8\xc3\xa9"'
    assert canonical_json("\ud800") == b'"\\ud800"'
    assert canonical_json("\ud83d\ude00") == '"😀"'.encode()


def test_non_json_values_and_keys_are_refused():
    with pytest.raises(EncodingError, match="not a JSON value"):
        canonical_json({"a": b"bytes"})
    with pytest.raises(EncodingError, match="not a string"):
        canonical_json({1: "x"})


@given(json_values)
def test_canonical_json_is_stable_under_parse(value):
    once = canonical_json(value)
    assert canonical_json(parse_json(once)) == once


def test_parse_json_refuses_what_json_parse_refuses():
    for bad in (b"NaN", b"[Infinity]", b"\xff", b"{", b""):
        with pytest.raises(EncodingError):
            parse_json(bad)


@given(json_values)
def test_the_c_encoder_shortcut_writes_exactly_what_the_javascript_walk_writes(value):
    from simkit.protocol.canonical import _encode

    walked: list[str] = []
    _encode(value, walked)
    assert canonical_json(value) == "".join(walked).encode("utf-8", "surrogatepass")


def test_plain_records_take_the_c_encoder_and_js_only_forms_take_the_walk():
    from simkit.protocol.canonical import _plain

    assert _plain({"id": "r1", "data": {"text": "é", "n": 3, "tags": ["a", None, True]}})
    for js_only in ({"n": 1.5}, {"10": 1}, {"\uffff": 1}, {"s": "\ud800"}, {"n": 2**53}):
        assert not _plain(js_only)
