"""Which replica acts: the same rule as kopf's peering, checked on kopf's own status format."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.common.peering import (
    PRIORITY_RANGE,
    active_across,
    default_priority,
    is_active,
    peers,
)

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def entry(priority: int, seen_ago: float = 1.0, lifetime: int = 60) -> dict[str, object]:
    # kopf writes lastseen with datetime.isoformat() of an aware UTC time.
    return {
        "priority": priority,
        "lifetime": lifetime,
        "lastseen": (NOW - timedelta(seconds=seen_ago)).isoformat(),
    }


def test_a_replica_not_yet_announced_does_not_act() -> None:
    assert not is_active({}, "me", 10, NOW)
    assert not is_active({"other": entry(1)}, "me", 10, NOW)


def test_alone_it_acts() -> None:
    assert is_active({"me": entry(10)}, "me", 10, NOW)


def test_a_live_peer_with_a_higher_priority_pauses_it() -> None:
    assert not is_active({"me": entry(10), "other": entry(11)}, "me", 10, NOW)


def test_a_live_peer_with_the_same_priority_pauses_both_as_kopf_does() -> None:
    status = {"a": entry(10), "b": entry(10)}
    assert not is_active(status, "a", 10, NOW) and not is_active(status, "b", 10, NOW)


def test_a_lower_priority_peer_does_not_pause_it() -> None:
    assert is_active({"me": entry(10), "other": entry(9)}, "me", 10, NOW)


def test_a_dead_leader_stops_counting_at_its_deadline() -> None:
    status = {"me": entry(1), "leader": entry(100, seen_ago=30, lifetime=15)}
    assert is_active(status, "me", 1, NOW)
    assert not is_active(status, "me", 1, NOW - timedelta(seconds=16))


def test_unreadable_entries_are_left_out() -> None:
    status = {"me": entry(5), "junk": {"priority": "x", "lastseen": "never"}, "other": "nope"}
    assert [p.identity for p in peers(status)] == ["me"]
    assert is_active(status, "me", 5, NOW)


def test_naive_timestamps_are_read_as_utc() -> None:
    naive = {"me": {"priority": 1, "lifetime": 60, "lastseen": "2026-11-22T11:59:59"}}
    assert peers(naive)[0].deadline == NOW + timedelta(seconds=59)


@given(st.lists(st.integers(*PRIORITY_RANGE), min_size=1, max_size=8, unique=True))
def test_among_live_replicas_with_distinct_priorities_exactly_the_highest_acts(prios: list[int]) -> None:
    status = {f"r{p}": entry(p) for p in prios}
    acting = [p for p in prios if is_active(status, f"r{p}", p, NOW)]
    assert acting == [max(prios)]


@given(st.lists(st.integers(1, 5), min_size=2, max_size=6), st.data())
def test_never_two_act_at_once(prios: list[int], data: st.DataObject) -> None:
    ages = data.draw(st.lists(st.floats(0, 120), min_size=len(prios), max_size=len(prios)))
    status = {f"r{i}": entry(p, seen_ago=a) for i, (p, a) in enumerate(zip(prios, ages, strict=True))}
    live = {f"r{i}" for i, a in enumerate(ages) if a < 60}
    acting = [f"r{i}" for i, p in enumerate(prios) if f"r{i}" in live and is_active(status, f"r{i}", p, NOW)]
    assert len(acting) <= 1


def test_across_namespaces_each_peering_object_that_exists_must_agree() -> None:
    """A replication round spans the watched namespaces: the replica runs it when it leads in every one whose
    peering object exists. One deleted with its namespace has no say, so the others go on replicating."""
    leading, trailing = {"me": entry(10), "other": entry(5)}, {"me": entry(10), "other": entry(11)}
    assert active_across([leading, leading], "me", 10, NOW)
    assert not active_across([leading, trailing], "me", 10, NOW)
    assert active_across([leading], "me", 10, NOW)  # the other namespace's peering object is gone
    assert not active_across([], "me", 10, NOW)  # none read yet (or none left): never act blind


def test_default_priority_is_in_range_and_varies() -> None:
    rng = random.Random(7)
    drawn = {default_priority(rng) for _ in range(50)}
    assert all(PRIORITY_RANGE[0] <= p <= PRIORITY_RANGE[1] for p in drawn) and len(drawn) > 45
