"""Hypothesis strategies shared by tests: JSON values as a JavaScript client sees them."""

from hypothesis import strategies as st

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e-5, max_value=1e-5),
    st.sampled_from(
        [0.0, -0.0, 1e21, 1e-7, 5e-324, 1.7976931348623157e308, 123456789012345680000.0]
    ),
    st.text(),
)
json_keys = st.one_of(
    st.text(max_size=8),
    st.integers(min_value=0, max_value=2**33).map(str),
    st.sampled_from(
        ["0", "01", "-1", "4294967294", "4294967295", "__proto__", "\ud800", "\U0001f600", "\uffff"]
    ),
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(json_keys, children, max_size=6)
    ),
    max_leaves=25,
)
