"""Upgrade milestones and time-in-state read off two stored blue-green statuses (for the metrics)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core.bluegreen.milestones import MILESTONES, transition
from keycloak_operator.models.upgrade_status import BlueGreenHistoryEntry, BlueGreenStatus


def status(*steps: tuple[str, str]) -> BlueGreenStatus:
    history = [BlueGreenHistoryEntry(state=s, at=at) for s, at in steps]
    return BlueGreenStatus(state=steps[-1][0], history=history)


T0 = "2026-11-22T10:00:00Z"


def test_no_transition_no_milestones() -> None:
    s = status((bg.WAITING_FOR_GREEN, T0))
    assert transition(s, s).milestones == () and transition(s, s).left is None


def test_leaving_rest_starts_an_upgrade() -> None:
    t = transition(None, status((bg.BACKING_UP, T0)))
    assert t.milestones == ("started",) and t.left is None
    after_completed = transition(status((bg.COMPLETED, T0)), status((bg.COMPLETED, T0), (bg.BACKING_UP, T0)))
    assert after_completed.milestones == ("started",) and after_completed.left is None


def test_time_in_the_state_left_comes_from_history() -> None:
    old = status(
        (bg.PROVISIONING_GREEN, "2026-11-22T10:00:00Z"), (bg.WAITING_FOR_GREEN, "2026-11-22T10:00:01Z")
    )
    new = status(*[(h.state, h.at) for h in old.history], (bg.CUTTING_OVER, "2026-11-22T10:00:31Z"))
    t = transition(old, new)
    assert t.left == bg.WAITING_FOR_GREEN and t.seconds_in_left == 30.0 and t.milestones == ()


def test_completion_failure_rollback_and_cancel_are_milestones() -> None:
    for state, milestone in [
        (bg.COMPLETED, "completed"),
        (bg.ROLLING_BACK, "rolled_back"),
        (bg.FAILED, "failed"),
        (bg.CANCELLING, "cancelled"),
    ]:
        old = status((bg.WAITING_FOR_GREEN, T0))
        assert milestone in transition(old, status((bg.WAITING_FOR_GREEN, T0), (state, T0))).milestones


def test_unreadable_or_missing_history_gives_no_duration() -> None:
    old = BlueGreenStatus(state=bg.DRAINING)
    new = status((bg.TEARING_DOWN_BLUE, T0))
    assert transition(old, new).left == bg.DRAINING and transition(old, new).seconds_in_left is None
    bad = status((bg.DRAINING, "yesterday"))
    assert (
        transition(bad, status((bg.DRAINING, "yesterday"), (bg.TEARING_DOWN_BLUE, T0))).seconds_in_left
        is None
    )


@given(st.sampled_from(bg.STATES), st.sampled_from(bg.STATES))
def test_milestones_are_bounded_and_rest_states_are_never_timed(a: str, b: str) -> None:
    t = transition(status((a, T0)), status((a, T0), (b, T0)))
    assert set(t.milestones) <= set(MILESTONES)
    assert t.left is None or (t.left == a and a not in bg.AT_REST)
    assert ("started" in t.milestones) == (a != b and a in bg.AT_REST and b not in bg.AT_REST)
