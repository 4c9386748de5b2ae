"""loads_bounded: json.loads, but a document nested too deep is a ValueError, not a crash."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.jsonbounds import JSONTooDeep, loads_bounded, nesting_exceeds

# JSON values with no containers, to nest inside arrays and objects.
SCALARS = st.none() | st.booleans() | st.integers() | st.text()
# Strings full of what the scan must skip: brackets, quotes, backslashes.
TRICKY = st.text(alphabet='[]{}"\\ab')
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TRICKY,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TRICKY, inner, max_size=3),
)
DEPTHS = st.integers(min_value=1, max_value=200)


def _nested(depth: int, *, kind: str, inner: Any = 0) -> Any:
    """A value nested `depth` arrays or objects deep, built without recursion."""
    value = inner
    for _ in range(depth):
        value = [value] if kind == "array" else {"a": value}
    return value


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in `value` (a scalar: 0)."""
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


def _document(depth: int, *, kind: str, inner: str = "0") -> str:
    """The text of a document nested `depth` deep around `inner`, as a client would send it."""
    if kind == "array":
        return "[" * depth + inner + "]" * depth
    return '{"a":' * depth + inner + "}" * depth


@given(max_depth=st.integers(min_value=1, max_value=100), kind=st.sampled_from(["array", "object"]))
def test_document_parses_when_nested_exactly_to_the_limit(max_depth: int, kind: str) -> None:
    parsed = loads_bounded(_document(max_depth, kind=kind), max_depth=max_depth)
    assert parsed == _nested(max_depth, kind=kind)


@given(max_depth=st.integers(min_value=1, max_value=100), kind=st.sampled_from(["array", "object"]))
def test_document_is_refused_when_nested_one_over_the_limit(max_depth: int, kind: str) -> None:
    with pytest.raises(JSONTooDeep, match=f"^JSON nested deeper than {max_depth} levels$"):
        loads_bounded(_document(max_depth + 1, kind=kind), max_depth=max_depth)


@pytest.mark.parametrize("kind", ["array", "object"])
def test_refusal_is_a_value_error_when_nested_far_past_the_stack(kind: str) -> None:
    with pytest.raises(ValueError, match="JSON nested deeper than 64 levels"):
        loads_bounded(_document(100_000, kind=kind))


def test_recursion_error_becomes_the_refusal_when_the_bound_is_past_the_stack() -> None:
    with pytest.raises(JSONTooDeep, match="JSON nested too deeply to parse"):
        loads_bounded(_document(20_000, kind="array"), max_depth=1_000_000)


@given(brackets=st.text(alphabet="[]{}", min_size=65, max_size=300))
def test_brackets_inside_a_string_do_not_count_when_the_value_is_flat(brackets: str) -> None:
    text = json.dumps({"note": brackets})
    assert loads_bounded(text) == {"note": brackets}


@given(tail=st.text(alphabet='[{\\"', max_size=200), depth=DEPTHS)
def test_escaped_quotes_do_not_end_a_string_when_brackets_follow(tail: str, depth: int) -> None:
    inner = json.dumps('\\"' + tail + "[" * depth)  # a string that looks like it closes
    text = _document(2, kind="array", inner=inner)
    assert loads_bounded(text, max_depth=2) == _nested(2, kind="array", inner=json.loads(inner))


def test_escaped_backslash_ends_a_string_when_a_quote_follows() -> None:
    text = '["\\\\", [[1]]]'  # the string is one backslash; the brackets after it count
    assert nesting_exceeds(text, max_depth=2)
    assert loads_bounded(text, max_depth=3) == ["\\", [[1]]]


@given(
    value=st.recursive(SCALARS, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner))
)
def test_result_is_json_loads_when_within_the_limit(value: Any) -> None:
    text = json.dumps(value)
    assert loads_bounded(text, max_depth=1_000) == json.loads(text)


@given(value=VALUES, max_depth=st.integers(min_value=0, max_value=6))
def test_scan_agrees_with_the_parsed_depth_when_strings_hold_brackets(
    value: Any, max_depth: int
) -> None:
    assert nesting_exceeds(json.dumps(value), max_depth=max_depth) == (_depth(value) > max_depth)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_bytes_are_decoded_as_json_loads_decodes_them(encoding: str) -> None:
    text = '{"tên": ["Hà Nội", "[[[["]}'
    assert loads_bounded(text.encode(encoding), max_depth=2) == json.loads(text)


def test_bytes_are_refused_when_nested_too_deep() -> None:
    with pytest.raises(JSONTooDeep):
        loads_bounded(_document(65, kind="array").encode())


def test_malformed_document_raises_json_error_when_within_the_limit() -> None:
    with pytest.raises(json.JSONDecodeError):
        loads_bounded('{"a": [1, 2}')


def test_unterminated_string_raises_json_error_when_brackets_follow_it() -> None:
    with pytest.raises(json.JSONDecodeError):
        loads_bounded('["' + "[" * 100)


def test_parse_constant_refuses_nan_when_given() -> None:
    def refuse(name: str) -> float:
        raise ValueError(f"not JSON: {name}")

    with pytest.raises(ValueError, match="not JSON: NaN"):
        loads_bounded("[NaN]", parse_constant=refuse)
    assert math.isnan(loads_bounded("[NaN]")[0])
