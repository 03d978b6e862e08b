"""The status command's view: versions, state with elapsed time and what it waits for, tracks, events."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core.progress import EVENTS_SHOWN, WAITING_FOR, duration, progress
from keycloak_operator.shell.status_command import render

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


def keycloak(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "kc", "namespace": "ns", "uid": "u1"},
        "spec": {"image": "quay.io/keycloak/keycloak:27.0.0"},
        "status": status,
    }


def deployment(name: str, image: str, ready: int, replicas: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"image": image}]}}},
        "status": {"readyReplicas": ready},
    }


def event(at: str, reason: str, type_: str = "Normal") -> dict[str, Any]:
    return {"lastTimestamp": at, "type": type_, "reason": reason, "message": f"{reason} happened"}


WAITING = keycloak(
    phase="Upgrading",
    versions={"nextVersion": "27.0.0#b", "currentVersion": "26.1.0#a", "lastVersion": "26.0.0#z"},
    blueGreen={
        "state": bg.WAITING_FOR_GREEN,
        "deadline": "2026-11-22T12:10:00Z",
        "history": [
            {"state": bg.BACKING_UP, "at": "2026-11-22T11:58:00Z"},
            {"state": bg.WAITING_FOR_GREEN, "at": "2026-11-22T11:59:15Z"},
        ],
    },
)


def test_an_upgrade_in_flight_shows_state_elapsed_deadline_and_both_tracks() -> None:
    blue = deployment("kc-keycloak", "quay.io/keycloak/keycloak:26.1.0", 3, 3)
    green = deployment("kc-green-keycloak", "quay.io/keycloak/keycloak:27.0.0", 1, 3)
    p = progress(WAITING, blue, green, [], NOW)
    assert (p.next_version, p.current_version, p.last_version) == ("27.0.0#b", "26.1.0#a", "26.0.0#z")
    assert p.state == bg.WAITING_FOR_GREEN and p.in_state_seconds == 45.0
    assert p.deadline_in_seconds == 600.0
    assert p.waiting_for == WAITING_FOR[bg.WAITING_FOR_GREEN]
    assert [(t.role, t.ready, t.desired) for t in p.tracks] == [("blue", 3, 3), ("green", 1, 3)]


def test_at_rest_there_is_no_deadline_and_no_green() -> None:
    k = keycloak(phase="Running", blueGreen={"state": bg.COMPLETED, "deadline": "2026-11-22T11:00:00Z"})
    p = progress(k, deployment("kc-keycloak", "img", 3, 3), None, [], NOW)
    assert p.deadline_in_seconds is None and [t.role for t in p.tracks] == ["blue"]
    assert p.in_state_seconds is None  # no history entry for the state


def test_a_keycloak_without_status_or_upgrade_is_idle_and_pending() -> None:
    k = {"metadata": {"name": "kc", "namespace": "ns"}, "spec": {"image": "x"}}
    p = progress(k, None, None, [], NOW)
    assert p.state == bg.IDLE and p.phase == "Pending" and p.tracks == () and p.current_version == ""


def test_backing_up_names_the_backup() -> None:
    k = keycloak(blueGreen={"state": bg.BACKING_UP, "backupName": "kc-27-0-0"})
    assert "kc-27-0-0" in progress(k, None, None, [], NOW).waiting_for


def test_every_state_says_what_it_waits_for() -> None:
    assert set(WAITING_FOR) == set(bg.STATES)


def test_only_the_newest_events_oldest_first() -> None:
    evs = [event(f"2026-11-22T11:{m:02d}:00Z", f"R{m}") for m in range(20)]
    p = progress(WAITING, None, None, list(reversed(evs)), NOW)
    assert [e.reason for e in p.events] == [f"R{m}" for m in range(20 - EVENTS_SHOWN, 20)]
    assert p.events[-1].age_seconds == 41 * 60


def test_events_without_time_or_message_do_not_break_the_view() -> None:
    p = progress(WAITING, None, None, [{"type": "Normal", "reason": "X", "message": None}], NOW)
    assert p.events[0].age_seconds is None and p.events[0].message == ""


@given(st.floats(min_value=0, max_value=10**7))
def test_duration_is_always_compact(seconds: float) -> None:
    text = duration(seconds)
    assert text.endswith(("s", "m")) and len(text) <= 8


def test_duration_examples() -> None:
    assert [duration(x) for x in (None, 5, 185, 7620)] == ["-", "5s", "3m05s", "2h07m"]


def test_rendered_view_contains_what_an_operator_needs() -> None:
    blue = deployment("kc-keycloak", "quay.io/keycloak/keycloak:26.1.0", 3, 3)
    green = deployment("kc-green-keycloak", "quay.io/keycloak/keycloak:27.0.0", 1, 3)
    p = progress(WAITING, blue, green, [event("2026-11-22T11:59:15Z", "GreenCreated")], NOW)
    console = Console(record=True, width=160)
    console.print(render(p))
    text = console.export_text()
    for needle in (
        "ns/kc",
        "27.0.0#b",
        "26.1.0#a",
        "WaitingForGreen, for 45s",
        "deadline in 10m00s",
        "every green replica to be Ready",
        "kc-green-keycloak",
        "1/3",
        "GreenCreated",
    ):
        assert needle in text, needle


def test_the_planners_path_is_shown_with_its_reason() -> None:
    plan = {"path": "Roll", "fromImage": "kc:26.7.0", "toImage": "kc:26.7.3", "reason": "a patch change"}
    p = progress(keycloak(phase="Upgrading", upgradePlan=plan), None, None, [], NOW)
    assert p.plan == "Roll: kc:26.7.0 -> kc:26.7.3, because a patch change"
    assert progress(keycloak(phase="Running"), None, None, [], NOW).plan == ""


def test_the_compatibility_check_behind_the_path_is_shown() -> None:
    plan = {
        "path": "Recreate",
        "fromImage": "a",
        "toImage": "b",
        "reason": "exit 3",
        "compatibilityCheck": "x",
    }
    p = progress(keycloak(phase="Upgrading", upgradePlan=plan), None, None, [], NOW)
    assert p.plan == "Recreate: a -> b, because exit 3 (Keycloak's compatibility check: x)"


def test_a_recreates_downtime_is_shown_while_it_lasts_and_once_measured() -> None:
    plan = {"path": "Recreate", "fromImage": "kc:26.5.6", "toImage": "kc:26.7.3", "reason": "a minor upgrade"}
    during = {**plan, "downtimeStarted": "2026-01-01T00:00:05Z"}
    p = progress(keycloak(phase="Upgrading", upgradePlan=during), None, None, [], NOW)
    assert p.plan.endswith("; no pod ready since 2026-01-01T00:00:05Z")
    after = {**during, "downtimeSeconds": 46}
    p = progress(keycloak(phase="Running", upgradePlan=after), None, None, [], NOW)
    assert p.plan.endswith("; no pod was ready for 46 s")


def test_a_copy_upgrade_shows_both_databases_and_the_write_window() -> None:
    k = keycloak(
        blueGreen={
            "state": bg.COPYING_DATABASE,
            "path": "BlueGreenCopy",
            "blueDatabase": "keycloak",
            "greenDatabase": "keycloak_26_7_3",
            "copyJob": "kc-dbcopy-1",
            "writeWindowSeconds": 75,
        },
        database={"name": "keycloak", "serving": "keycloak"},
    )
    p = progress(k, None, None, [], NOW)
    assert "kc-dbcopy-1" in p.waiting_for
    assert p.database == (
        "serving keycloak; blue on keycloak, green on keycloak_26_7_3; "
        "write window 75 s (blue's writes after the copy)"
    )


def test_after_a_promoted_copy_the_serving_copy_is_named() -> None:
    k = keycloak(database={"name": "k_26_7_3", "copiedFrom": "k", "serving": "k_26_7_3"})
    assert progress(k, None, None, [], NOW).database == "serving k_26_7_3 (a copy standing in for k)"
    assert progress(keycloak(), None, None, [], NOW).database == ""
