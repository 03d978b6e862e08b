import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import durations
from keycloak_operator.models.upgrade_policy import DURATION_PATTERN, UpgradePolicy


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15m", 900.0),
        ("1h30m", 5400.0),
        ("10s", 10.0),
        ("500ms", 0.5),
        ("1.5h", 5400.0),
        ("0s", 0.0),
        ("1m1m", 120.0),  # the CRD pattern allows repeated units; they add up
        ("2h3m4s5ms", 7384.005),
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert durations.parse(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "15", "m", "-5s", "1 m", "1d", "1.m", ".5s", "5sec", "15M", "1h 30m"])
def test_parse_rejects_what_the_crd_rejects(text: str) -> None:
    assert not re.match(DURATION_PATTERN, text)
    with pytest.raises(ValueError, match="not a duration"):
        durations.parse(text)


def test_policy_defaults_parse() -> None:
    policy = UpgradePolicy()
    assert durations.parse(policy.green_ready_timeout) == 900.0
    assert durations.parse(policy.backup_timeout) == 600.0
    assert durations.parse(policy.drain_delay) == 10.0


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.5, "500ms"), (10, "10s"), (900, "15m"), (5400, "1h30m"), (3661.25, "1h1m1s250ms")],
)
def test_format(seconds: float, text: str) -> None:
    assert durations.format_seconds(seconds) == text


def test_format_rejects_negative() -> None:
    with pytest.raises(ValueError):
        durations.format_seconds(-1)


_parts = st.lists(
    st.tuples(
        st.one_of(st.integers(0, 10_000).map(str), st.decimals(0, 999, places=3).map(str)),
        st.sampled_from(["ms", "s", "m", "h"]),
    ),
    min_size=1,
    max_size=4,
)


@given(_parts)
def test_crd_pattern_and_parser_agree(parts: list[tuple[str, str]]) -> None:
    text = "".join(n + u for n, u in parts)
    assert re.match(DURATION_PATTERN, text)
    expected = sum(float(n) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[u] for n, u in parts)
    assert durations.parse(text) == pytest.approx(expected)


@given(st.integers(0, 10**9))
def test_format_round_trips_to_the_millisecond(millis: int) -> None:
    text = durations.format_seconds(millis / 1000)
    assert re.match(DURATION_PATTERN, text)
    assert round(durations.parse(text) * 1000) == millis
