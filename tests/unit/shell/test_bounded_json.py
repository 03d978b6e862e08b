"""A server's JSON answer is parsed as json.loads would, or refused before more values or listing entries
than the limits allow are built (core/bounded_json.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.bounded_json import JsonLimits, TooLarge, loads, shape, value_bound

WIDE = JsonLimits(max_entries=10**9, max_values=10**9)

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=5), inner, max_size=6),
    max_leaves=40,
)
spellings = st.sampled_from([{}, {"indent": 2}, {"separators": (",", ":")}, {"ensure_ascii": False}])


def count(value: Any) -> int:
    if isinstance(value, list):
        return 1 + sum(count(v) for v in value)
    if isinstance(value, dict):
        return 1 + sum(count(v) for v in value.values())
    return 1


@given(values, spellings, st.integers(0, 60))
def test_the_bound_is_never_below_the_values_held_and_stops_only_past_its_limit(
    value: Any, spelling: dict[str, Any], limit: int
) -> None:
    text = json.dumps(value, **spelling)
    bound = value_bound(text)
    assert bound >= count(value)
    stopped = value_bound(text, stop_above=limit)
    assert (stopped > limit) == (bound > limit)
    assert stopped == bound or stopped > limit


@given(values, spellings)
def test_a_listings_entries_are_counted_exactly_from_its_text(value: Any, spelling: dict[str, Any]) -> None:
    expected = len(value) if isinstance(value, list) else 0
    assert shape(json.dumps(value, **spelling)).entries == expected
    assert shape(" \n" + json.dumps([value, value], **spelling) + " ").entries == 2


@given(values, spellings, st.integers(0, 50))
def test_within_the_limits_an_answer_parses_as_json_loads_parses_it(
    value: Any, spelling: dict[str, Any], entries: int
) -> None:
    text = json.dumps(value, **spelling)
    assert loads(text, WIDE) == json.loads(text)
    listing = json.dumps([value] * entries, **spelling)  # the entry by entry path
    assert loads(listing, JsonLimits(max_entries=entries, max_values=10**9)) == [value] * entries


@given(st.text(alphabet=' \t\n[]{},:"\\0123456789.-eEtrufalsn', max_size=40))
def test_any_text_is_json_exactly_when_json_loads_says_so(text: str) -> None:
    for limits in (WIDE, JsonLimits(max_entries=0, max_values=10**9)):
        try:
            expected: Any = ("ok", json.loads(text))
        except (ValueError, RecursionError):
            expected = ("error",)
        try:
            got: Any = ("ok", loads(text, limits))
        except TooLarge:
            # Only under the cap, and never for an answer within it (refusing stops reading, so text that
            # is not JSON past the cap may be refused as too large rather than as not JSON).
            assert limits.max_entries == 0
            assert expected[0] == "error" or (isinstance(expected[1], list) and len(expected[1]) > 0)
            continue
        except (ValueError, RecursionError):
            got = ("error",)
        assert repr(got) == repr(expected)


def test_a_listing_over_the_entry_cap_is_refused_at_the_entry_past_it() -> None:
    limits = JsonLimits(max_entries=3, max_values=100)
    assert loads(" [ {} , {}, {} ] ", limits) == [{}, {}, {}]
    with pytest.raises(TooLarge, match="a listing of more than 3 entries"):
        loads("[{},{},{},{}]", limits)
    # Counted on the text: nothing is parsed, so what follows may not even be JSON.
    with pytest.raises(TooLarge):
        loads("[{},{},{},{}, this is not JSON", limits)
    assert loads("[]", JsonLimits(max_entries=0, max_values=100)) == []
    assert loads('{"a": [1, 2, 3, 4, 5]}', limits) == {"a": [1, 2, 3, 4, 5]}  # not a listing


def test_an_answer_over_the_value_cap_is_refused_before_it_is_parsed() -> None:
    limits = JsonLimits(max_entries=10, max_values=10)
    nested = '[{"a": [' + ",".join(["{}"] * 20) + "]}]"  # one entry, holding many values
    with pytest.raises(TooLarge, match="more than 10 JSON values"):
        loads(nested, limits)
    assert loads('["a,b,c,d,e,f,g,h,i,j,k,l", "[{[{[{"]', limits) == ["a,b,c,d,e,f,g,h,i,j,k,l", "[{[{[{"]
