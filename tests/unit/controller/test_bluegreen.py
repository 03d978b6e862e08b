"""The blue-green machine, transition by transition, then driven end to end through a simulated world."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import upgrade_plan as up
from keycloak_operator.kernel import names
from keycloak_operator.models.upgrade_status import BlueGreenHistoryEntry, BlueGreenStatus

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
BLUE = "quay.io/keycloak/keycloak:26.0.0"
GREEN = "quay.io/keycloak/keycloak:27.0.0"
THIRD = "quay.io/keycloak/keycloak:28.0.0"


def dep(
    image: str,
    track: str,
    *,
    ready: bool = True,
    replicas: int = 3,
    uid: str = "u-blue",
    deleting: bool = False,
) -> dict[str, Any]:
    n = replicas if ready else 0
    meta: dict[str, Any] = {"uid": uid, "generation": 1, "labels": {names.LABEL_TRACK: track}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T11:00:00Z"
    return {
        "metadata": meta,
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"image": image}]}}},
        "status": {
            "observedGeneration": 1,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "availableReplicas": n,
            "readyReplicas": n,
        },
    }


def world(**kw: Any) -> bg.Observed:
    base: dict[str, Any] = {
        "name": "kc",
        "spec_image": GREEN,
        "replicas": 3,
        "blue": dep(BLUE, "a"),
        "public_selector_track": "a",
        "green_serving_endpoints": 3,  # the EndpointSlice controller caught up, unless a test says not
        "upgrade_path": up.BLUE_GREEN_SHARED,  # the planner's; the machine's own tests take it as given
    }
    return bg.Observed(**{**base, **kw})


def status(state: str, **kw: Any) -> BlueGreenStatus:
    base: dict[str, Any] = {
        "state": state,
        "blue_image": BLUE,
        "green_image": GREEN,
        "blue_track": "a",
        "green_track": "b",
        "backup_name": "kc-pre-12345678",
        "started_at": "2026-01-01T11:59:00Z",
        "deadline": "2026-01-01T12:01:00Z",
        "message": "",
    }
    return BlueGreenStatus(**{**base, **kw})


def green(**kw: Any) -> dict[str, Any]:
    return dep(kw.pop("image", GREEN), kw.pop("track", "b"), uid=kw.pop("uid", "u-green"), **kw)


def step(s: BlueGreenStatus | None, w: bg.Observed, now: datetime = NOW) -> bg.Step:
    result = bg.step(s, w, now)
    # Determinism is what makes a resumed step safe: the same inputs always give the same step.
    assert bg.step(s, w, now) == result
    return result


def state_of(result: bg.Step) -> str | None:
    return result.status.state if result.status is not None else None


def moved_to(result: bg.Step, state: str, now: datetime = NOW) -> None:
    assert state_of(result) == state
    assert result.requeue_after == 0.0
    assert result.status is not None
    assert result.status.history[-1].state == state
    assert result.status.history[-1].at == now.strftime("%Y-%m-%dT%H:%M:%SZ")
    kind = "Warning" if state in (bg.ROLLING_BACK, bg.FAILED) else "Normal"
    assert (kind, f"BlueGreen{state}") in [(e.type, e.reason) for e in result.events]


def stayed(result: bg.Step, before: BlueGreenStatus, actions: list[bg.Action]) -> None:
    assert result.status == before
    assert result.actions == actions
    assert result.events == []
    assert result.requeue_after is not None and result.requeue_after > 0


# --- entry --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stored", [None, BlueGreenStatus(), status(bg.COMPLETED, blue_track="b", green_track="a")]
)
def test_image_change_starts_an_upgrade(stored: BlueGreenStatus | None) -> None:
    result = step(stored, world())
    moved_to(result, bg.BACKING_UP)
    s = result.status
    assert s is not None and result.actions == []
    assert (s.blue_image, s.green_image, s.blue_track, s.green_track) == (BLUE, GREEN, "a", "b")
    assert s.started_at == "2026-01-01T12:00:00Z"
    assert s.deadline == "2026-01-01T12:10:00Z"  # backupTimeout 10m
    assert s.backup_name == bg.backup_name("kc", GREEN, s.started_at)
    assert s.backup_name.startswith("kc-pre-") and len(s.backup_name) == len("kc-pre-") + 8


@pytest.mark.parametrize("path", [up.RECREATE, up.REFUSE, up.ROLL, None])
def test_no_upgrade_starts_unless_the_planner_chose_a_blue_green_path(path: str | None) -> None:
    """Recreate, Refuse and Roll are the reconcile's to carry out (the copy path: test_bluegreen_copy.py)."""
    assert step(None, world(upgrade_path=path)) == bg.Step(None)


@pytest.mark.parametrize("state", [bg.BACKING_UP, bg.PROVISIONING_GREEN, bg.WAITING_FOR_GREEN])
def test_a_third_image_that_cannot_share_the_database_cancels(state: str) -> None:
    result = step(status(state), world(spec_image=THIRD, green=green(), upgrade_path=up.REFUSE))
    moved_to(result, bg.CANCELLING)
    assert result.status is not None and "cannot run beside" in result.status.message


def test_entry_takes_tracks_from_the_running_blue() -> None:
    s = step(None, world(blue=dep(BLUE, "b"))).status
    assert s is not None and (s.blue_track, s.green_track) == ("b", "a")
    unlabeled = dep(BLUE, "a")
    unlabeled["metadata"]["labels"] = {}
    s = step(None, world(blue=unlabeled)).status
    assert s is not None and (s.blue_track, s.green_track) == ("a", "b")


def test_backup_name_is_per_upgrade() -> None:
    assert bg.backup_name("kc", GREEN, "t1") == bg.backup_name("kc", GREEN, "t1")
    assert bg.backup_name("kc", GREEN, "t1") != bg.backup_name("kc", GREEN, "t2")
    assert bg.backup_name("kc", GREEN, "t1") != bg.backup_name("kc", THIRD, "t1")


@pytest.mark.parametrize(
    "w",
    [
        world(strategy="Recreate"),
        world(blue=None),  # first creation is not an upgrade
        world(spec_image=BLUE),
    ],
)
@pytest.mark.parametrize("stored", [None, BlueGreenStatus(), status(bg.COMPLETED)])
def test_no_upgrade(w: bg.Observed, stored: BlueGreenStatus | None) -> None:
    result = step(stored, w)
    assert result == bg.Step(stored)


# --- BackingUp ----------------------------------------------------------------------------------------------


def test_backing_up_creates_the_backup_when_none_exists() -> None:
    s = status(bg.BACKING_UP)
    result = step(s, world(backup_phase=None))
    stayed(result, s, [bg.CreateBackup("kc-pre-12345678", "cnpg")])


def test_backup_is_created_exactly_once() -> None:
    s = status(bg.BACKING_UP)
    for later in (NOW, NOW + timedelta(seconds=5), NOW + timedelta(seconds=30)):
        result = step(s, world(backup_phase="pending"), later)
        stayed(result, s, [])
        assert result.requeue_after is not None and result.requeue_after <= bg.POLL_S


def test_managed_with_pvc_snapshots() -> None:
    s = status(bg.BACKING_UP)
    result = step(s, world(tier="managed", managed_pvc=True))
    stayed(result, s, [bg.CreateBackup("kc-pre-12345678", "managed")])


def test_backup_completed_moves_on_keeping_its_name() -> None:
    result = step(status(bg.BACKING_UP), world(backup_phase="completed"))
    moved_to(result, bg.PROVISIONING_GREEN)
    assert result.actions == []
    assert result.status is not None and result.status.backup_name == "kc-pre-12345678"


@pytest.mark.parametrize(
    ("w", "when", "reason"),
    [
        (world(backup_phase="failed"), NOW, "backup kc-pre-12345678 failed"),
        (world(backup_phase="pending"), NOW + timedelta(minutes=1), "not completed within 10m"),
        (world(backup_phase=None), NOW + timedelta(minutes=2), "not completed within 10m"),
    ],
)
def test_backup_failure_or_deadline_rolls_back(w: bg.Observed, when: datetime, reason: str) -> None:
    result = step(status(bg.BACKING_UP), w, when)
    assert state_of(result) == bg.ROLLING_BACK and result.actions == []
    assert result.status is not None and reason in result.status.message
    assert result.events[-1].type == "Warning"


@pytest.mark.parametrize("w", [world(tier="external"), world(tier="managed", managed_pvc=False)])
def test_no_backup_possible_warns_and_proceeds(w: bg.Observed) -> None:
    result = step(status(bg.BACKING_UP), w)
    moved_to(result, bg.PROVISIONING_GREEN)
    assert result.actions == []
    assert result.status is not None and result.status.backup_name == ""
    assert result.events[0].type == "Warning" and result.events[0].reason == "NoBackup"


# --- ProvisioningGreen, WaitingForGreen ---------------------------------------------------------------------


@pytest.mark.parametrize("existing", [None, green(ready=False)])
def test_provisioning_applies_green(existing: dict[str, Any] | None) -> None:
    result = step(status(bg.PROVISIONING_GREEN), world(green=existing))
    moved_to(result, bg.WAITING_FOR_GREEN)
    assert result.actions == [bg.ApplyGreen(GREEN, "b")]
    assert result.status is not None and result.status.deadline == "2026-01-01T12:15:00Z"


@pytest.mark.parametrize("leftover", [green(image=THIRD), green(track="a")])
def test_provisioning_deletes_a_green_of_another_image_or_track(leftover: dict[str, Any]) -> None:
    s = status(bg.PROVISIONING_GREEN)
    stayed(step(s, world(green=leftover)), s, [bg.DeleteGreen()])


def test_provisioning_waits_for_an_old_green_to_go() -> None:
    s = status(bg.PROVISIONING_GREEN)
    stayed(step(s, world(green=green(image=THIRD, deleting=True))), s, [])


def test_waiting_stays_until_the_deadline() -> None:
    s = status(bg.WAITING_FOR_GREEN)
    result = step(s, world(green=green(ready=False)))
    stayed(result, s, [])
    assert result.requeue_after == 60.0  # the deadline; green's own events wake us sooner


def test_green_ready_cuts_over() -> None:
    result = step(status(bg.WAITING_FOR_GREEN), world(green=green()))
    moved_to(result, bg.CUTTING_OVER)
    assert result.actions == []


def test_ready_wins_over_a_passed_deadline() -> None:
    result = step(status(bg.WAITING_FOR_GREEN), world(green=green()), NOW + timedelta(hours=1))
    assert state_of(result) == bg.CUTTING_OVER


@pytest.mark.parametrize(
    "not_ready",
    [
        green(ready=False),
        green(image=BLUE),  # complete, but not green's image
        green(replicas=2),  # complete, but fewer than spec.replicas
    ],
)
def test_green_not_fully_ready_does_not_cut_over(not_ready: dict[str, Any]) -> None:
    assert state_of(step(status(bg.WAITING_FOR_GREEN), world(green=not_ready))) == bg.WAITING_FOR_GREEN


@pytest.mark.parametrize("serving", [None, 0, 2])
def test_ready_green_waits_for_its_endpoint_slices_to_list_every_pod_serving(serving: int | None) -> None:
    s = status(bg.WAITING_FOR_GREEN)
    result = step(s, world(green=green(), green_serving_endpoints=serving))
    stayed(result, s, [])
    assert result.requeue_after == 0.5  # no event comes from the slices: polled, briefly


def test_ready_green_lagging_slices_at_the_deadline_rolls_back() -> None:
    later = NOW + timedelta(minutes=1)
    result = step(status(bg.WAITING_FOR_GREEN), world(green=green(), green_serving_endpoints=1), later)
    moved_to(result, bg.ROLLING_BACK, later)


def test_green_scaled_during_the_upgrade_is_applied_again() -> None:
    s = status(bg.WAITING_FOR_GREEN)
    stayed(step(s, world(green=green(replicas=2), replicas=3)), s, [bg.ApplyGreen(GREEN, "b")])


def test_green_deadline_rolls_back() -> None:
    later = NOW + timedelta(minutes=1)
    result = step(status(bg.WAITING_FOR_GREEN), world(green=green(ready=False)), later)
    moved_to(result, bg.ROLLING_BACK, later)
    assert result.status is not None and result.status.message == "green not Ready within 15m"


def test_missing_green_is_applied_again_in_place_under_the_same_deadline() -> None:
    s = status(bg.WAITING_FOR_GREEN)
    stayed(step(s, world(green=None)), s, [bg.ApplyGreen(GREEN, "b")])


def test_green_being_deleted_is_waited_for() -> None:
    s = status(bg.WAITING_FOR_GREEN)
    stayed(step(s, world(green=green(ready=False, deleting=True))), s, [])


# --- CuttingOver, Draining, TearingDownBlue -----------------------------------------------------------------


def test_cutover_switches_the_public_selector() -> None:
    s = status(bg.CUTTING_OVER)
    stayed(step(s, world(green=green())), s, [bg.SwitchTraffic("b")])


def test_cutover_waits_again_if_green_lost_readiness_before_the_switch() -> None:
    result = step(status(bg.CUTTING_OVER), world(green=green(ready=False)))
    moved_to(result, bg.WAITING_FOR_GREEN)
    assert result.actions == []
    assert result.status is not None and result.status.deadline == "2026-01-01T12:01:00Z"  # not extended


def test_cutover_waits_again_if_green_is_no_longer_all_serving_before_the_switch() -> None:
    result = step(status(bg.CUTTING_OVER), world(green=green(), green_serving_endpoints=2))
    moved_to(result, bg.WAITING_FOR_GREEN)
    assert result.actions == []


def test_serving_pods_counts_distinct_pods_serving_and_not_terminating() -> None:
    def endpoint(pod: str, **conditions: bool) -> dict[str, Any]:
        return {"addresses": [f"10.0.0.{len(pod)}"], "conditions": conditions, "targetRef": {"name": pod}}

    slices = [
        {"endpoints": [endpoint("a", ready=True, serving=True), endpoint("b", ready=True, serving=False)]},
        {"endpoints": [endpoint("a", ready=True, serving=True)]},  # the same pod in a second slice
        {
            "endpoints": [
                endpoint("ccc", ready=True, serving=True, terminating=True),
                endpoint("dd", ready=True),
            ]
        },
        {"endpoints": None},
        {},
    ]
    assert bg.serving_pods(slices) == 1
    assert bg.serving_pods([]) == 0


def test_switched_then_drains() -> None:
    result = step(status(bg.CUTTING_OVER), world(green=green(), public_selector_track="b"))
    moved_to(result, bg.DRAINING)
    assert result.status is not None and result.status.deadline == "2026-01-01T12:00:10Z"


def test_switched_without_teardown_completes_and_keeps_blue() -> None:
    w = world(green=green(), public_selector_track="b", auto_teardown=False)
    result = step(status(bg.CUTTING_OVER), w)
    moved_to(result, bg.COMPLETED)
    assert result.actions == []
    assert bg.blue_kept(result.status, w.blue)


def test_draining_waits_then_tears_down() -> None:
    s = status(bg.DRAINING, deadline="2026-01-01T12:00:10Z")
    w = world(green=green(), public_selector_track="b")
    result = step(s, w)
    stayed(result, s, [])
    assert result.requeue_after == 10.0
    later = NOW + timedelta(seconds=10)
    moved_to(step(s, w, later), bg.TEARING_DOWN_BLUE, later)


def test_teardown_deletes_blue_by_uid_then_promotes() -> None:
    s = status(bg.TEARING_DOWN_BLUE)
    w = world(green=green(), public_selector_track="b")
    stayed(step(s, w), s, [bg.DeleteBlue("u-blue")])
    stayed(step(s, replace(w, blue=dep(BLUE, "a", deleting=True))), s, [])
    result = step(s, replace(w, blue=None))
    moved_to(result, bg.PROMOTING)
    assert result.actions == []


# --- Promoting ----------------------------------------------------------------------------------------------


def test_promoting_orphans_green_before_anything_else() -> None:
    s = status(bg.PROMOTING)
    w = world(blue=None, green=green(), public_selector_track="b", green_discovery_exists=True)
    stayed(step(s, w), s, [bg.OrphanGreen("u-green")])


def test_promoting_adopts_only_after_green_is_gone() -> None:
    s = status(bg.PROMOTING)
    w = world(blue=None, public_selector_track="b", green_discovery_exists=True)
    stayed(step(s, replace(w, green=green(deleting=True))), s, [])  # orphaning in progress
    stayed(step(s, w), s, [bg.AdoptAsCanonical(GREEN, "b")])


def test_promoting_deletes_green_discovery_once_the_canonical_is_ready() -> None:
    s = status(bg.PROMOTING)
    w = world(blue=dep(GREEN, "b", ready=False, uid="u-canon"), public_selector_track="b")
    stayed(step(s, replace(w, green_discovery_exists=True)), s, [])
    ready = replace(w, blue=dep(GREEN, "b", uid="u-canon"))
    stayed(step(s, replace(ready, green_discovery_exists=True)), s, [bg.DeleteGreenDiscovery()])
    result = step(s, ready)
    moved_to(result, bg.COMPLETED)
    assert result.actions == []
    assert not bg.blue_kept(result.status, ready.blue)


def test_promoting_sends_a_reappeared_blue_back_to_teardown() -> None:
    result = step(status(bg.PROMOTING), world(green=green(), public_selector_track="b"))
    moved_to(result, bg.TEARING_DOWN_BLUE)


# --- RollingBack, Cancelling --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "end", "message"),
    [(bg.ROLLING_BACK, bg.FAILED, "green not Ready within 15m"), (bg.CANCELLING, bg.IDLE, "cancelled")],
)
def test_unwinding_puts_traffic_on_blue_first_then_removes_green(state: str, end: str, message: str) -> None:
    s = status(state, message="green not Ready within 15m")
    w = world(green=green(ready=False), green_discovery_exists=True, public_selector_track="b")
    stayed(step(s, w), s, [bg.SwitchTraffic("a")])
    w = replace(w, public_selector_track="a")
    stayed(step(s, w), s, [bg.DeleteGreen(), bg.DeleteGreenDiscovery()])
    stayed(step(s, replace(w, green=green(deleting=True), green_discovery_exists=False)), s, [])
    result = step(s, replace(w, green=None, green_discovery_exists=False))
    moved_to(result, end)
    assert result.actions == []
    assert result.status is not None and message in result.status.message


# --- spec changes during an upgrade -------------------------------------------------------------------------


@pytest.mark.parametrize("state", sorted(bg.BEFORE_CUTOVER))
def test_reverting_the_spec_before_cutover_cancels(state: str) -> None:
    result = step(status(state), world(spec_image=BLUE, green=green(ready=False)))
    moved_to(result, bg.CANCELLING)
    assert result.actions == []


@pytest.mark.parametrize("state", [bg.PROVISIONING_GREEN, bg.WAITING_FOR_GREEN])
def test_a_third_image_replaces_the_green_in_flight(state: str) -> None:
    result = step(status(state), world(spec_image=THIRD, green=green(ready=False)))
    moved_to(result, bg.PROVISIONING_GREEN)
    assert result.actions == [bg.DeleteGreen()]
    s = result.status
    assert s is not None and s.green_image == THIRD
    assert (s.backup_name, s.blue_image, s.green_track) == ("kc-pre-12345678", BLUE, "b")  # backup kept
    # Resumed before the delete happened: ProvisioningGreen deletes the old green itself, then applies.
    w = world(spec_image=THIRD, green=green(ready=False))
    stayed(step(s, w), s, [bg.DeleteGreen()])
    assert step(s, replace(w, green=None)).actions == [bg.ApplyGreen(THIRD, "b")]


def test_a_third_image_during_the_backup_keeps_the_backup() -> None:
    result = step(status(bg.BACKING_UP), world(spec_image=THIRD, backup_phase="pending"))
    moved_to(result, bg.BACKING_UP)
    assert result.actions == []
    s = result.status
    assert s is not None and (s.green_image, s.backup_name) == (THIRD, "kc-pre-12345678")


@pytest.mark.parametrize(
    ("state", "w"),
    [
        (bg.CUTTING_OVER, world(green=green())),
        (bg.DRAINING, world(green=green(), public_selector_track="b")),
        (bg.PROMOTING, world(blue=None, green=green(), public_selector_track="b")),
    ],
)
@pytest.mark.parametrize("spec_image", [BLUE, THIRD])
def test_from_cutover_on_the_upgrade_runs_to_its_end(state: str, w: bg.Observed, spec_image: str) -> None:
    same = step(status(state), w)
    assert step(status(state), replace(w, spec_image=spec_image)) == same


# --- at rest ------------------------------------------------------------------------------------------------


def test_failed_image_is_not_retried_until_the_spec_changes() -> None:
    s = status(bg.FAILED, message="green not Ready within 15m")
    assert step(s, world(spec_image=GREEN)) == bg.Step(s)
    again = step(s, world(spec_image=THIRD))
    moved_to(again, bg.BACKING_UP)
    assert again.status is not None and again.status.green_image == THIRD


def test_failed_then_spec_reverted_is_idle() -> None:
    result = step(status(bg.FAILED), world(spec_image=BLUE))
    moved_to(result, bg.IDLE)
    assert step(result.status, world(spec_image=BLUE)) == bg.Step(result.status)


def test_completed_starts_the_next_upgrade_from_the_promoted_track() -> None:
    done = status(bg.COMPLETED)
    result = step(
        done, world(spec_image=THIRD, blue=dep(GREEN, "b", uid="u-canon"), public_selector_track="b")
    )
    s = result.status
    assert s is not None and s.state == bg.BACKING_UP
    assert (s.blue_image, s.green_image, s.blue_track, s.green_track) == (GREEN, THIRD, "b", "a")


class TestBlueKept:
    """Completed with autoTeardown false: green serves as `{name}-green-keycloak`, blue stays."""

    w = world(green=green(), public_selector_track="b", auto_teardown=False)

    def test_at_rest(self) -> None:
        s = status(bg.COMPLETED)
        assert step(s, self.w) == bg.Step(s)

    def test_reverting_the_spec_returns_traffic_to_blue(self) -> None:
        moved_to(step(status(bg.COMPLETED), replace(self.w, spec_image=BLUE)), bg.CANCELLING)

    def test_a_new_image_removes_the_kept_blue_first(self) -> None:
        moved_to(step(status(bg.COMPLETED), replace(self.w, spec_image=THIRD)), bg.TEARING_DOWN_BLUE)

    def test_removing_blue_by_hand_promotes_green(self) -> None:
        moved_to(step(status(bg.COMPLETED), replace(self.w, blue=None)), bg.PROMOTING)


# --- bookkeeping --------------------------------------------------------------------------------------------


def test_history_keeps_the_last_entries() -> None:
    old = [BlueGreenHistoryEntry(state="X", at=str(i)) for i in range(bg.HISTORY_LIMIT)]
    result = step(status(bg.WAITING_FOR_GREEN, history=old), world(green=green()))
    assert result.status is not None
    assert len(result.status.history) == bg.HISTORY_LIMIT
    assert result.status.history[0].at == "1" and result.status.history[-1].state == bg.CUTTING_OVER


def test_unknown_state_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown blue-green state"):
        bg.step(status("Bogus"), world(), NOW)


def test_unreadable_deadline_fails_safe() -> None:
    result = step(status(bg.WAITING_FOR_GREEN, deadline="soon"), world(green=green(ready=False)))
    assert state_of(result) == bg.ROLLING_BACK


@pytest.mark.parametrize("deadline", ["soon", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_a_deadline_out_of_range_is_unreadable_and_fails_safe(deadline: str) -> None:
    # Before year 1 or after 9999 once in UTC: Python raises OverflowError, not ValueError.
    result = step(status(bg.WAITING_FOR_GREEN, deadline=deadline), world(green=green(ready=False)))
    assert state_of(result) == bg.ROLLING_BACK


def test_naive_now_is_utc() -> None:
    assert bg.step(None, world(), NOW.replace(tzinfo=None)) == bg.step(None, world(), NOW)


# --- resume after a crash right after persisting ------------------------------------------------------------
# Each row: the stored state, the world as it is when the actions that came with entering that state never
# ran, and what the resumed step does. Every action repeated is idempotent (apply, create-by-name, delete).

RESUME = [
    (bg.BACKING_UP, world(), [bg.CreateBackup("kc-pre-12345678", "cnpg")], bg.BACKING_UP),
    (bg.COPYING_DATABASE, world(), [], bg.ROLLING_BACK),  # no Job recorded: never an unnamed one
    (
        bg.PROVISIONING_GREEN,
        world(backup_phase="completed"),
        [bg.ApplyGreen(GREEN, "b")],
        bg.WAITING_FOR_GREEN,
    ),
    (bg.WAITING_FOR_GREEN, world(), [bg.ApplyGreen(GREEN, "b")], bg.WAITING_FOR_GREEN),
    (bg.CUTTING_OVER, world(green=green()), [bg.SwitchTraffic("b")], bg.CUTTING_OVER),
    (bg.DRAINING, world(green=green(), public_selector_track="b"), [], bg.DRAINING),
    (bg.TEARING_DOWN_BLUE, world(green=green(), public_selector_track="b"), [bg.DeleteBlue("u-blue")], None),
    (
        bg.PROMOTING,
        world(blue=None, green=green(), public_selector_track="b"),
        [bg.OrphanGreen("u-green")],
        None,
    ),
    (bg.ROLLING_BACK, world(green=green(ready=False)), [bg.DeleteGreen()], bg.ROLLING_BACK),
    (bg.CANCELLING, world(spec_image=BLUE, green=green(ready=False)), [bg.DeleteGreen()], bg.CANCELLING),
    (bg.COMPLETED, world(blue=dep(GREEN, "b", uid="u-canon"), public_selector_track="b"), [], bg.COMPLETED),
    (bg.FAILED, world(), [], bg.FAILED),
    (bg.IDLE, world(spec_image=BLUE), [], bg.IDLE),
]


def test_resume_table_covers_every_state() -> None:
    assert sorted(row[0] for row in RESUME) == sorted(bg.STATES)


@pytest.mark.parametrize(("state", "w", "actions", "next_state"), RESUME, ids=[r[0] for r in RESUME])
def test_resume_from_each_stored_state(
    state: str, w: bg.Observed, actions: list[bg.Action], next_state: str | None
) -> None:
    stored = BlueGreenStatus.model_validate(
        status(state, deadline="2026-01-01T12:00:10Z").wire()
    )  # read back
    result = step(stored, w)
    assert result.actions == actions
    assert state_of(result) == (next_state or state)


# --- serving helpers ----------------------------------------------------------------------------------------


def test_in_flight() -> None:
    assert not bg.in_flight(None)
    assert [s for s in bg.STATES if bg.in_flight(status(s))] == [s for s in bg.STATES if s not in bg.AT_REST]


@pytest.mark.parametrize(
    ("state", "spec_image", "blue", "image"),
    [
        (None, GREEN, None, GREEN),
        (bg.IDLE, GREEN, None, GREEN),
        (bg.BACKING_UP, GREEN, dep(BLUE, "a"), BLUE),
        (bg.WAITING_FOR_GREEN, THIRD, dep(BLUE, "a"), BLUE),
        (bg.TEARING_DOWN_BLUE, GREEN, dep(BLUE, "a"), BLUE),
        (bg.PROMOTING, THIRD, None, GREEN),
        (bg.COMPLETED, GREEN, dep(GREEN, "b"), GREEN),
        (bg.COMPLETED, GREEN, dep(BLUE, "a"), BLUE),  # blue kept
        (bg.ROLLING_BACK, GREEN, dep(BLUE, "a"), BLUE),
        (bg.FAILED, GREEN, dep(BLUE, "a"), BLUE),  # never rolls the failed image into blue
        (bg.FAILED, THIRD, dep(BLUE, "a"), THIRD),
    ],
)
def test_serving_image(state: str | None, spec_image: str, blue: dict[str, Any] | None, image: str) -> None:
    s = None if state is None else status(state)
    assert bg.serving_image(s, spec_image, blue) == image


def named(d: dict[str, Any], name: str) -> dict[str, Any]:
    return {**d, "metadata": {**d["metadata"], "name": name}}


def test_green_rolled_out_only_for_this_keycloaks_green_with_every_replica_up() -> None:
    green = names.deployment("kc", green=True)
    assert bg.green_rolled_out("kc", named(dep(GREEN, "b"), green))
    assert not bg.green_rolled_out("kc", named(dep(GREEN, "b", ready=False), green))
    assert not bg.green_rolled_out("kc", named(dep(GREEN, "b", deleting=True), green))
    assert not bg.green_rolled_out("kc", named(dep(BLUE, "a"), names.deployment("kc")))
    # A Keycloak named "kc-green" owns "kc-green-keycloak": its canonical Deployment, not a green.
    assert not bg.green_rolled_out("kc-green", named(dep(BLUE, "a"), names.deployment("kc-green")))


def test_serving_track() -> None:
    assert bg.serving_track(None, "a") == "a"
    assert bg.serving_track(BlueGreenStatus(), "b") == "b"
    on_green = {bg.CUTTING_OVER, bg.DRAINING, bg.TEARING_DOWN_BLUE, bg.PROMOTING, bg.COMPLETED}
    for s in bg.STATES:
        assert bg.serving_track(status(s), "x") == ("b" if s in on_green else "a")


# --- the whole machine against a simulated world ------------------------------------------------------------


@dataclass
class Sim:
    """A tiny fake cluster: applies actions like the shell would and lets pods become Ready over time."""

    replicas: int = 3
    blue: dict[str, Any] | None = field(default_factory=lambda: dep(BLUE, "a", uid="u-0"))
    green: dict[str, Any] | None = None
    orphans: tuple[str, str] | None = None  # (image, track) of a ReplicaSet whose Deployment is gone
    selector: str | None = "a"
    backups: dict[str, str] = field(default_factory=dict)
    green_discovery: bool = False
    backup_creates: set[str] = field(default_factory=set)
    green_images: set[str] = field(default_factory=set)
    green_uids: set[str] = field(default_factory=set)
    green_never_ready: bool = False
    # Green pods the EndpointSlice controller lists as serving: it catches up one tick after the Deployment.
    green_slices: int = 0
    uids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def observed(self, spec_image: str, stored: BlueGreenStatus | None, **kw: Any) -> bg.Observed:
        name = stored.backup_name if stored is not None else ""
        phase: Any = self.backups.get(name)
        return world(
            spec_image=spec_image,
            blue=self.blue,
            green=self.green,
            public_selector_track=self.selector,
            backup_phase=phase,
            green_discovery_exists=self.green_discovery,
            green_serving_endpoints=self.green_slices,
            **kw,
        )

    def apply(self, a: bg.Action) -> None:
        uid = f"u-{next(self.uids)}"
        match a:
            case bg.CreateBackup(name=name):
                self.backups.setdefault(name, "pending")
                self.backup_creates.add(name)
            case bg.ApplyGreen(image=image, track=track):
                if (
                    self.green is None
                    or self.green["spec"]["template"] != dep(image, track)["spec"]["template"]
                ):
                    keep = self.green["metadata"]["uid"] if self.green is not None else uid
                    self.green = dep(image, track, ready=False, uid=keep)
                    self.green_slices = 0
                self.green_discovery = True
                self.green_images.add(image)
                self.green_uids.add(self.green["metadata"]["uid"])
            case bg.DeleteGreen():
                self.green, self.green_slices = None, 0
            case bg.SwitchTraffic(track=track):
                self.selector = track
            case bg.DeleteBlue(uid=target):
                if self.blue is not None and self.blue["metadata"]["uid"] == target:
                    self.blue = None
            case bg.OrphanGreen(uid=target):
                if self.green is not None and self.green["metadata"]["uid"] == target:
                    self.orphans = (bg_image(self.green), track_of(self.green))
                    self.green = None
            case bg.AdoptAsCanonical(image=image, track=track):
                adopted = self.orphans == (image, track)  # same template: no new pods, no restart
                self.blue, self.orphans = dep(image, track, ready=adopted, uid=uid), None
            case bg.DeleteGreenDiscovery():
                self.green_discovery = False

    def progress(self) -> None:
        self.green_slices = self.green["status"]["readyReplicas"] if self.green is not None else 0
        self.backups = dict.fromkeys(self.backups, "completed")
        if self.green is not None and not self.green_never_ready:
            self.green = dep(bg_image(self.green), track_of(self.green), uid=self.green["metadata"]["uid"])
        if self.blue is not None:
            self.blue = dep(bg_image(self.blue), track_of(self.blue), uid=self.blue["metadata"]["uid"])

    def serving(self) -> bool:
        """Some pod is listed ready behind the public Service's selector: for green, by the lagging slices."""
        pods = [d for d in (self.blue, self.green) if d is not None and d["status"]["readyReplicas"] > 0]
        pods = [d for d in pods if d is not self.green or self.green_slices > 0]
        tracks = {track_of(d) for d in pods} | ({self.orphans[1]} if self.orphans else set())
        return self.selector in tracks


def bg_image(d: dict[str, Any]) -> str:
    return str(d["spec"]["template"]["spec"]["containers"][0]["image"])


def track_of(d: dict[str, Any]) -> str:
    return str(d["metadata"]["labels"][names.LABEL_TRACK])


CRASHES = st.sampled_from(["none", "none", "before-persist", "after-persist", "mid-actions"])


def drive(
    sim: Sim, crashes: list[str], flips: list[bool], *, tick: int, **kw: Any
) -> tuple[BlueGreenStatus | None, list[str]]:
    stored: BlueGreenStatus | None = None
    now, seen = NOW, []
    for i in range(400):
        result = bg.step(stored, sim.observed(GREEN, stored, **kw), now)
        crash = crashes[i] if i < len(crashes) else "none"
        if crash != "before-persist":
            assert result.status is not None
            # Persisted, then read back from the stored object: what survives is what the wire keeps.
            stored = BlueGreenStatus.model_validate(result.status.wire())
            seen.append(stored.state)
            if crash != "after-persist":
                for k, action in enumerate(result.actions):
                    if crash == "mid-actions" and k == 1:
                        break
                    sim.apply(action)
                    assert sim.serving(), f"no Ready endpoint after {action} in {stored.state}"
        if stored is not None and stored.state in bg.AT_REST and result.requeue_after is None:
            return stored, seen
        if flips[i] if i < len(flips) else True:
            sim.progress()
        now += timedelta(seconds=tick)
    raise AssertionError(f"did not settle: {seen[-10:]}")


@settings(max_examples=150, deadline=None)
@given(
    crashes=st.lists(CRASHES, max_size=60),
    flips=st.lists(st.booleans(), max_size=40),
    tick=st.integers(1, 10),
    auto_teardown=st.booleans(),
    tier=st.sampled_from(["cnpg", "managed", "external"]),
)
def test_any_crash_schedule_completes_with_one_backup_and_one_green(
    crashes: list[str], flips: list[bool], tick: int, auto_teardown: bool, tier: str
) -> None:
    sim = Sim()
    final, seen = drive(
        sim, crashes, flips, tick=tick, auto_teardown=auto_teardown, tier=tier, managed_pvc=True
    )
    assert final is not None and final.state == bg.COMPLETED, seen
    assert len(sim.backup_creates) == (0 if tier == "external" else 1)
    assert sim.green_images == {GREEN}
    assert len(sim.green_uids) == 1
    assert sim.selector == "b"
    if auto_teardown:  # promoted: canonical runs green's template, nothing green-named is left
        assert sim.blue is not None and (bg_image(sim.blue), track_of(sim.blue)) == (GREEN, "b")
        assert sim.green is None and not sim.green_discovery and sim.orphans is None
    else:  # blue kept beside the serving green
        assert sim.blue is not None and bg_image(sim.blue) == BLUE
        assert sim.green is not None and bg_image(sim.green) == GREEN


@settings(max_examples=50, deadline=None)
@given(crashes=st.lists(CRASHES, max_size=60), tick=st.integers(5, 120))
def test_any_crash_schedule_with_a_broken_green_fails_back_to_blue(crashes: list[str], tick: int) -> None:
    sim = Sim(green_never_ready=True)
    final, seen = drive(sim, crashes, [], tick=tick, backup_timeout_s=86400.0)  # only green is late
    assert final is not None and final.state == bg.FAILED, seen
    assert final.message == "green not Ready within 15m"
    assert sim.selector == "a" and sim.green is None and not sim.green_discovery
    assert sim.blue is not None and bg_image(sim.blue) == BLUE
    assert len(sim.backup_creates) == 1
