"""The fleet gauges' pure half: what a Keycloak's stored status shows from outside, and the bounded counts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import fleet

NOW = datetime(2026, 11, 28, 2, 0, 0, tzinfo=UTC)


def ready(status: str = "True") -> dict[str, Any]:
    return {"type": "Ready", "status": status, "reason": "R", "message": "", "lastTransitionTime": "x"}


def test_a_running_keycloak_is_ready_and_at_rest() -> None:
    s = fleet.standing({"phase": "Running", "conditions": [ready()]})
    assert s == fleet.Standing(ready=True, phase="Running")


def test_no_status_or_no_ready_condition_is_not_ready() -> None:
    assert fleet.standing(None) == fleet.Standing(ready=False, phase="Pending")
    assert not fleet.standing({"phase": "Running", "conditions": [ready("False")]}).ready
    assert not fleet.standing({"phase": "Running", "conditions": [ready("Unknown")]}).ready


def test_a_status_that_does_not_parse_is_not_ready_and_unknown() -> None:
    assert fleet.standing({"replicas": "many"}) == fleet.Standing(ready=False, phase="Unknown")
    assert fleet.standing({"phase": "Exploding"}).phase == "Unknown"


def test_an_upgrade_in_flight_knows_when_it_entered_its_state() -> None:
    history = [
        {"state": bg.PROVISIONING_GREEN, "at": "2026-11-28T01:50:00Z"},
        {"state": bg.WAITING_FOR_GREEN, "at": "2026-11-28T01:55:00Z"},
    ]
    s = fleet.standing(
        {"phase": "Upgrading", "blueGreen": {"state": bg.WAITING_FOR_GREEN, "history": history}}
    )
    assert s.upgrade_state == bg.WAITING_FOR_GREEN
    assert s.entered == datetime(2026, 11, 28, 1, 55, tzinfo=UTC)
    t = fleet.tally([s], NOW)
    assert t.upgrades[bg.WAITING_FOR_GREEN] == 1 and t.longest_in_state[bg.WAITING_FOR_GREEN] == 300.0


def test_at_rest_states_are_not_in_progress_and_failed_is_counted_apart() -> None:
    for state in (bg.IDLE, bg.COMPLETED):
        assert fleet.standing({"blueGreen": {"state": state}}).upgrade_state == ""
    failed = fleet.standing({"phase": "Degraded", "blueGreen": {"state": bg.FAILED}})
    t = fleet.tally([failed], NOW)
    assert t.failed_upgrades == 1 and sum(t.upgrades.values()) == 0 and t.phases["Degraded"] == 1


def test_an_unreadable_history_time_counts_the_state_but_no_age() -> None:
    s = fleet.standing(
        {"blueGreen": {"state": bg.DRAINING, "history": [{"state": bg.DRAINING, "at": "soon"}]}}
    )
    t = fleet.tally([s], NOW)
    assert t.upgrades[bg.DRAINING] == 1 and t.longest_in_state[bg.DRAINING] == 0.0


def test_unknown_states_and_plan_paths_add_no_label() -> None:
    s = fleet.standing({"blueGreen": {"state": "Teleporting"}, "upgradePlan": {"path": "Wish"}})
    assert s.upgrade_state == "" and s.plan == ""
    t = fleet.tally([s], NOW)
    assert set(t.upgrades) == set(fleet.IN_FLIGHT) and set(t.plans) == set(fleet.PLAN_PATHS)


def test_the_plan_path_is_counted() -> None:
    s = fleet.standing({"upgradePlan": {"path": "BlueGreenCopy"}})
    assert fleet.tally([s, s], NOW).plans["BlueGreenCopy"] == 2


def test_every_key_is_present_with_nothing_to_count() -> None:
    t = fleet.tally([], NOW)
    assert t.not_ready == 0 and t.failed_upgrades == 0
    assert set(t.phases) == set(fleet.PHASES) and not any(t.phases.values())
    assert set(t.longest_in_state) == set(fleet.IN_FLIGHT) and not any(t.longest_in_state.values())
    assert fleet.PLAN_PATHS and "None" not in fleet.PLAN_PATHS
    assert bg.FAILED not in fleet.IN_FLIGHT and bg.IDLE not in fleet.IN_FLIGHT


statuses = st.fixed_dictionaries(
    {},
    optional={
        "phase": st.one_of(st.sampled_from(fleet.PHASES), st.text(max_size=12)),
        "conditions": st.lists(
            st.fixed_dictionaries(
                {"type": st.sampled_from(["Ready", "Degraded"]), "status": st.text(max_size=5)}
            ),
            max_size=3,
        ),
        "blueGreen": st.fixed_dictionaries(
            {"state": st.one_of(st.sampled_from(bg.STATES), st.text(max_size=12))},
            optional={
                "history": st.lists(
                    st.fixed_dictionaries(
                        {
                            "state": st.sampled_from(bg.STATES),
                            "at": st.one_of(
                                st.integers(min_value=0, max_value=10**8).map(
                                    lambda s: (NOW - timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ")
                                ),
                                st.text(max_size=8),
                            ),
                        }
                    ),
                    max_size=3,
                )
            },
        ),
        "upgradePlan": st.fixed_dictionaries({"path": st.text(max_size=16)}),
    },
)


@given(st.lists(statuses, max_size=4))
def test_counts_stay_within_their_fixed_sets_and_add_up(raw: list[dict[str, Any]]) -> None:
    standings = [fleet.standing(s) for s in raw]
    t = fleet.tally(standings, NOW)
    assert set(t.phases) == set(fleet.PHASES) and sum(t.phases.values()) == len(raw)
    assert set(t.upgrades) == set(fleet.IN_FLIGHT) and set(t.plans) == set(fleet.PLAN_PATHS)
    assert 0 <= t.not_ready <= len(raw)
    assert sum(t.upgrades.values()) + t.failed_upgrades <= len(raw)
    assert all(v >= 0 for v in t.longest_in_state.values())
    assert all(t.upgrades[s] > 0 for s, age in t.longest_in_state.items() if age > 0)


@given(st.integers(min_value=0, max_value=10**6))
def test_the_longest_age_is_the_oldest_entry(seconds: int) -> None:
    def at(ago: int) -> fleet.Standing:
        return fleet.Standing(False, "Upgrading", bg.CUTTING_OVER, NOW - timedelta(seconds=ago))

    assert fleet.tally([at(seconds), at(0)], NOW).longest_in_state[bg.CUTTING_OVER] == seconds
