"""The blue-green machine on the BlueGreenCopy path: green on its own copy of blue's database."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import database_copy
from keycloak_operator.core import upgrade_plan as up
from keycloak_operator.models.upgrade_status import BlueGreenStatus
from tests.unit.controller.test_bluegreen import (
    BLUE,
    CRASHES,
    GREEN,
    NOW,
    THIRD,
    Sim,
    bg_image,
    drive,
    green,
    moved_to,
    status,
    stayed,
    step,
    world,
)

# The copy's name for the upgrade these tests start at NOW (database_copy.copy_name).
GREEN_DB = database_copy.copy_name("keycloak", GREEN, "2026-01-01T12:00:00Z")


def copy_world(**kw: Any) -> bg.Observed:
    base: dict[str, Any] = {
        "upgrade_path": up.BLUE_GREEN_COPY,
        "database": "keycloak",
        "spec_database": "keycloak",
        "tier": "external",
        "copy_timeout_s": 300.0,
    }
    return world(**{**base, **kw})


def copying(**kw: Any) -> BlueGreenStatus:
    base: dict[str, Any] = {
        "path": up.BLUE_GREEN_COPY,
        "blue_database": "keycloak",
        "green_database": GREEN_DB,
        "copy_job": "kc-dbcopy-12345678",
        "copy_started": "2026-01-01T11:59:00Z",
    }
    return status(bg.COPYING_DATABASE, **{**base, **kw})


def test_the_copy_path_starts_an_upgrade_with_green_on_its_own_database() -> None:
    result = step(None, copy_world())
    moved_to(result, bg.BACKING_UP)
    s = result.status
    assert s is not None
    assert (s.path, s.blue_database, s.green_database) == (up.BLUE_GREEN_COPY, "keycloak", GREEN_DB)


def test_a_shared_upgrade_keeps_green_on_blues_database() -> None:
    s = step(None, copy_world(upgrade_path=up.BLUE_GREEN_SHARED, database="keycloak_26_7_3")).status
    assert s is not None and s.green_database == s.blue_database == "keycloak_26_7_3"


def test_after_the_backup_the_database_is_copied() -> None:
    stored = status(bg.BACKING_UP, path=up.BLUE_GREEN_COPY, blue_database="keycloak", green_database=GREEN_DB)
    result = step(stored, copy_world())  # external: no backup possible
    moved_to(result, bg.COPYING_DATABASE)
    s = result.status
    assert s is not None
    assert s.copy_job == database_copy.job_name("kc", GREEN_DB, "2026-01-01T12:00:00Z")
    assert s.copy_started == "2026-01-01T12:00:00Z"
    assert s.deadline == "2026-01-01T12:05:00Z"  # copyTimeout 300 s


def test_the_copy_job_is_asked_for_once() -> None:
    stored = copying(deadline="2026-01-01T12:05:00Z")
    stayed(step(stored, copy_world()), stored, [bg.CopyDatabase("kc-dbcopy-12345678", "keycloak", GREEN_DB)])
    stayed(step(stored, copy_world(copy_phase="pending")), stored, [])


def test_a_completed_copy_provisions_green_on_it() -> None:
    result = step(copying(deadline="2026-01-01T12:05:00Z"), copy_world(copy_phase="completed"))
    moved_to(result, bg.PROVISIONING_GREEN)
    result = step(result.status, copy_world())
    moved_to(result, bg.WAITING_FOR_GREEN)
    assert result.actions == [bg.ApplyGreen(GREEN, "b", GREEN_DB, apart=True)]


@pytest.mark.parametrize(
    ("phase", "deadline", "message"),
    [
        ("failed", "2026-01-01T12:05:00Z", "database copy failed: see the logs of Job kc-dbcopy-12345678"),
        ("pending", "2026-01-01T11:59:59Z", "not completed within 5m"),
        ("pending", "not a time", "not completed within 5m"),
    ],
)
def test_a_failed_or_late_copy_rolls_back(phase: str, deadline: str, message: str) -> None:
    result = step(copying(deadline=deadline), copy_world(copy_phase=phase))
    moved_to(result, bg.ROLLING_BACK)
    assert result.status is not None and message in result.status.message


@pytest.mark.parametrize("broken", [{"copy_job": ""}, {"green_database": ""}, {"green_database": "keycloak"}])
def test_a_copy_state_without_its_job_or_target_never_copies(broken: dict[str, str]) -> None:
    result = step(copying(deadline="2026-01-01T12:05:00Z", **broken), copy_world())
    moved_to(result, bg.ROLLING_BACK)
    assert result.actions == []


@pytest.mark.parametrize("state", [bg.COPYING_DATABASE, bg.PROVISIONING_GREEN, bg.WAITING_FOR_GREEN])
def test_a_third_image_during_a_copy_upgrade_starts_over(state: str) -> None:
    stored = copying(deadline="2026-01-01T12:05:00Z").model_copy(update={"state": state})
    result = step(stored, copy_world(spec_image=THIRD, green=green()))
    moved_to(result, bg.CANCELLING)


def test_the_cutover_records_the_write_window() -> None:
    stored = copying(deadline="2026-01-01T12:05:00Z").model_copy(update={"state": bg.CUTTING_OVER})
    result = step(stored, copy_world(green=green(), public_selector_track="b"))
    moved_to(result, bg.DRAINING)
    assert result.status is not None and result.status.write_window_seconds == 60
    (window,) = [e for e in result.events if e.reason == "WriteWindow"]
    assert "60 s" in window.message and GREEN_DB in window.message and "keycloak" in window.message


def test_a_shared_cutover_has_no_write_window() -> None:
    stored = status(bg.CUTTING_OVER)
    result = step(stored, world(green=green(), public_selector_track="b", auto_teardown=False))
    moved_to(result, bg.COMPLETED)
    assert result.status is not None and result.status.write_window_seconds is None
    assert "WriteWindow" not in [e.reason for e in result.events]


def test_promotion_adopts_green_with_its_database() -> None:
    stored = copying().model_copy(update={"state": bg.PROMOTING})
    result = step(stored, copy_world(blue=None, green=None, public_selector_track="b"))
    assert result.actions == [bg.AdoptAsCanonical(GREEN, "b", GREEN_DB)]


def test_rollback_with_blue_kept_returns_to_blues_database() -> None:
    stored = copying().model_copy(update={"state": bg.COMPLETED})
    result = step(stored, copy_world(spec_image=BLUE, green=green(), public_selector_track="b"))
    moved_to(result, bg.CANCELLING)
    result = step(result.status, copy_world(spec_image=BLUE, green=green(), public_selector_track="b"))
    assert result.actions == [bg.SwitchTraffic("a")]


# --- the whole copy path against a simulated world, under any crash schedule ------------------------------


@dataclass
class CopySim(Sim):
    jobs: dict[str, str] = field(default_factory=dict)
    job_creates: list[tuple[str, str, str]] = field(default_factory=list)
    green_database: str | None = None
    canonical_database: str = "keycloak"

    def observed(self, spec_image: str, stored: BlueGreenStatus | None, **kw: Any) -> bg.Observed:
        job = stored.copy_job if stored is not None else ""
        phase: Any = self.jobs.get(job) if job else None
        return super().observed(spec_image, stored, copy_phase=phase, **kw)

    def apply(self, a: bg.Action) -> None:
        match a:
            case bg.CopyDatabase(job=job, source=source, target=target):
                assert job not in self.jobs, "a copy Job is created once"
                self.jobs[job] = "pending"
                self.job_creates.append((job, source, target))
            case bg.ApplyGreen(database=database):
                self.green_database = database
            case bg.AdoptAsCanonical(database=database):
                # The canonical's template equals green's only with green's database: otherwise a restart.
                assert database == self.green_database
                self.canonical_database = database
        super().apply(a)

    def progress(self) -> None:
        super().progress()
        self.jobs = dict.fromkeys(self.jobs, "completed")


@settings(max_examples=100, deadline=None)
@given(
    crashes=st.lists(CRASHES, max_size=60),
    flips=st.lists(st.booleans(), max_size=40),
    tick=st.integers(1, 10),
    auto_teardown=st.booleans(),
)
def test_any_crash_schedule_copies_once_and_green_runs_only_on_the_copy(
    crashes: list[str], flips: list[bool], tick: int, auto_teardown: bool
) -> None:
    sim = CopySim()
    kw = {
        "upgrade_path": up.BLUE_GREEN_COPY,
        "database": "keycloak",
        "spec_database": "keycloak",
        "tier": "external",
        "auto_teardown": auto_teardown,
    }
    final, seen = drive(sim, crashes, flips, tick=tick, **kw)
    assert final is not None and final.state == bg.COMPLETED, seen
    # The copy is named for the upgrade as it started (a crash before the first persist starts it later).
    copy = database_copy.copy_name("keycloak", GREEN, final.started_at)
    assert final.green_database == copy
    assert [(source, target) for _, source, target in sim.job_creates] == [("keycloak", copy)]
    assert sim.green_database == copy  # green never ran on blue's database
    assert final.write_window_seconds is not None and final.write_window_seconds >= 0
    if auto_teardown:
        assert sim.canonical_database == copy
        assert sim.blue is not None and bg_image(sim.blue) == GREEN
    else:
        assert sim.canonical_database == "keycloak"  # the kept blue is untouched
        assert sim.blue is not None and bg_image(sim.blue) == BLUE


def run_until_rest(sim: CopySim, each_tick: Callable[[CopySim], None], **kw: Any) -> BlueGreenStatus:
    """Step the machine against `sim` every 5 s, `each_tick` moving the world on, until it rests; the copy
    never completes unless `each_tick` completes it (no progress() call)."""
    stored: BlueGreenStatus | None = None
    now = NOW
    for _ in range(200):
        result = bg.step(stored, sim.observed(GREEN, stored, upgrade_path=up.BLUE_GREEN_COPY, **kw), now)
        stored = BlueGreenStatus.model_validate(result.status.wire()) if result.status is not None else None
        for action in result.actions:
            sim.apply(action)
        each_tick(sim)
        if stored is not None and stored.state in bg.AT_REST:
            break
        now += timedelta(seconds=5)
    assert stored is not None
    return stored


def assert_failed_back_to_blue(sim: CopySim, stored: BlueGreenStatus) -> None:
    assert stored.state == bg.FAILED
    assert "not completed within 1m" in stored.message
    assert sim.green is None and sim.selector == "a" and len(sim.job_creates) == 1


def test_a_copy_never_completing_fails_back_to_blue() -> None:
    sim = CopySim()
    kw = {"database": "keycloak", "spec_database": "keycloak", "tier": "external", "copy_timeout_s": 60.0}
    assert_failed_back_to_blue(sim, run_until_rest(sim, lambda _: None, **kw))
