import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from lorelab.errors import JSONInputError
from lorelab.io import MAX_DEPTH, canonical_bytes, canonical_json, json_bytes, loads_strict

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_canonical_json_round_trips_through_strict_parsing(value):
    assert loads_strict(canonical_bytes(value), "value") == value


@given(json_values)
def test_canonical_json_is_stable_under_a_round_trip(value):
    once = canonical_json(value)
    assert canonical_json(loads_strict(once.encode(), "value")) == once


@given(json_values)
def test_json_bytes_is_the_utf8_length_of_the_canonical_form(value):
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert json_bytes(value) == len(expected)


def test_canonical_form_has_no_whitespace_and_keeps_key_order():
    assert canonical_json({"b": 1, "a": [1, 2], "é": "ü"}) == '{"b":1,"a":[1,2],"é":"ü"}'


def test_json_bytes_counts_utf8_bytes_not_characters():
    assert json_bytes("é") == 4  # two quotes plus a two-byte character


def test_canonical_json_accepts_pydantic_models():
    class Point(BaseModel):
        x: int
        y: int

    assert canonical_json(Point(x=1, y=2)) == '{"x":1,"y":2}'


def test_canonical_json_refuses_nan():
    with pytest.raises(ValueError, match="not JSON compliant"):
        canonical_json(math.nan)


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}'])
def test_nan_and_infinity_are_refused(text):
    with pytest.raises(JSONInputError, match=r"m\.json: invalid JSON"):
        loads_strict(text.encode(), "m.json")


def test_duplicate_keys_are_refused_with_the_key_named():
    with pytest.raises(JSONInputError, match='duplicate key "a"'):
        loads_strict(b'{"a": 1, "b": {"a": 2}, "a": 3}', "m.json")


def test_duplicate_keys_in_nested_objects_are_refused():
    with pytest.raises(JSONInputError, match='duplicate key "x"'):
        loads_strict(b'[{"x": 1, "x": 1}]', "m.json")


def test_ten_thousand_deep_nesting_is_refused_without_recursion_error():
    data = b"[" * 10_000 + b"]" * 10_000
    with pytest.raises(JSONInputError, match=f"deeper than {MAX_DEPTH}"):
        loads_strict(data, "m.json")


def test_nesting_at_the_bound_is_accepted():
    data = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert loads_strict(data, "m.json") is not None


def test_brackets_inside_strings_do_not_count_as_nesting():
    text = json.dumps({"s": "[" * 500 + '\\"{' * 100})
    assert loads_strict(text.encode(), "m.json")["s"].startswith("[[[")


def test_non_utf8_is_refused_with_the_byte_offset():
    with pytest.raises(JSONInputError, match="not valid UTF-8 at byte 7"):
        loads_strict(b'{"a": "\xff"}', "m.json")


def test_byte_order_mark_is_refused():
    with pytest.raises(JSONInputError, match="byte order mark"):
        loads_strict(b'\xef\xbb\xbf{"a": 1}', "m.json")


def test_syntax_error_names_file_line_and_column():
    with pytest.raises(JSONInputError, match=r"m.json: invalid JSON at line 2 column 8"):
        loads_strict(b'{"a": 1,\n  "b": }', "m.json")


def test_lone_surrogate_is_refused():
    with pytest.raises(JSONInputError, match="lone surrogate"):
        loads_strict(b'["\\ud800"]', "m.json")


@pytest.mark.parametrize("text", ["1e309", "[-1e400]", '{"x": 1.5e999}'])
def test_numbers_out_of_float_range_are_refused(text):
    with pytest.raises(JSONInputError, match="out of range"):
        loads_strict(text.encode(), "m.json")
