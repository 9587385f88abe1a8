"""How an answer is held against the model's: JSON equality, and the snapshot ``ok`` keeps."""

import json

from hypothesis import given
from hypothesis import strategies as st

from simkit.model.answer import _walk, compare, ok, same
from simkit.protocol.canonical import compact_json
from simkit.protocol.http import json_response

LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.0, 1.0, 2.5])
    | st.text(max_size=2)
)
JSON = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(JSON, JSON)
def test_same_is_json_equality_whatever_the_fast_path_says(a, b):
    """``true`` is not ``1`` and ``1`` is ``1.0``, in every position."""
    assert same(a, b) == _walk(a, b)


def _twist(value, data):
    """A near copy of a JSON value: keys in another order, and any number or boolean
    perhaps swapped for its look-alike (1.0 for 1, 1 for True, 0.0 for False)."""
    if isinstance(value, dict):
        return {k: _twist(value[k], data) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_twist(item, data) for item in value]
    if isinstance(value, bool) and data.draw(st.booleans()):
        return 1 if value else 0.0
    if isinstance(value, int) and data.draw(st.booleans()):
        return float(value)
    return value


@given(JSON, st.data())
def test_same_agrees_with_the_walk_on_near_copies(value, data):
    """Where the fast path could be fooled: equal in Python, different in JSON."""
    twisted = _twist(value, data)
    assert same(value, twisted) == _walk(value, twisted)


@given(JSON)
def test_same_holds_for_a_value_and_its_parse(value):
    assert same(value, json.loads(json.dumps(value)))


def test_true_is_not_one_even_deep_inside():
    assert not same({"a": [True]}, {"a": [1]})
    assert not same({"a": 0}, {"a": False})
    assert same({"a": [1]}, {"a": [1.0]})


def test_ok_keeps_a_snapshot_later_changes_cannot_reach():
    body = {"ops": [{"seq": 1}], "more": False}
    expected = ok("pull: pages", body)
    body["ops"][0]["seq"] = 2
    body["more"] = True
    assert expected.body == {"ops": [{"seq": 1}], "more": False}


@given(st.dictionaries(st.text(max_size=2), JSON, max_size=3), st.data())
def test_an_answer_agrees_by_its_bytes_or_by_the_walk_never_otherwise(value, data):
    """An answer encoded as the model's is the same at once; a near copy (other key
    order, 1.0 for 1, 1 for true) is judged by the walk: JSON equality either way."""
    twisted = _twist(value, data)
    response = json_response(200, twisted)
    assert (response.body == compact_json(value).encode("ascii")) <= _walk(value, twisted)
    assert (compare(ok("pull: pages", value), response) == []) == _walk(value, twisted)
