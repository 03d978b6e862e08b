"""The blue-green machine's copy path on the cnpg tier: BackingUp -> CopyingDatabase (a Cluster recovered
from the pre-upgrade Backup) -> ProvisioningGreen on that Cluster -> ... -> promotion onto it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import cnpg_copy
from keycloak_operator.core import upgrade_plan as up
from keycloak_operator.models.upgrade_status import BlueGreenStatus
from tests.unit.controller.test_bluegreen import CRASHES, GREEN, drive, green, moved_to, stayed, step, world
from tests.unit.controller.test_bluegreen import status as bg_status
from tests.unit.controller.test_bluegreen_copy import CopySim, assert_failed_back_to_blue, run_until_rest

COPY = cnpg_copy.copy_name("kcdb", GREEN, "2026-01-01T12:00:00Z")
BACKUP = "kc-pre-12345678"


def cnpg_world(**kw: Any) -> bg.Observed:
    base: dict[str, Any] = {
        "upgrade_path": up.BLUE_GREEN_COPY,
        "database": "kcdb",
        "spec_database": "kcdb",
        "tier": "cnpg",
        "copy_timeout_s": 300.0,
    }
    return world(**{**base, **kw})


def status(state: str, **kw: Any) -> BlueGreenStatus:
    base: dict[str, Any] = {
        "path": up.BLUE_GREEN_COPY,
        "spec_database": "kcdb",
        "blue_database": "kcdb",
        "green_database": COPY,
        "copy_job": COPY,
        "copy_started": "2026-01-01T11:59:00Z",
        "deadline": "2026-01-01T12:05:00Z",
    }
    return bg_status(state, **{**base, **kw})


def test_the_upgrade_names_green_a_cluster_and_backs_up_the_one_blue_runs_on() -> None:
    result = step(None, cnpg_world())
    moved_to(result, bg.BACKING_UP)
    s = result.status
    assert s is not None and (s.blue_database, s.green_database) == ("kcdb", COPY)
    result = step(s, cnpg_world())
    assert result.actions == [bg.CreateBackup(s.backup_name, "cnpg", "kcdb")]


def test_after_the_backup_the_copy_is_the_cluster_recovered_from_it() -> None:
    stored = status(bg.BACKING_UP, copy_job="", copy_started="")
    result = step(stored, cnpg_world(backup_phase="completed"))
    moved_to(result, bg.COPYING_DATABASE)
    s = result.status
    assert s is not None and s.copy_job == COPY and s.backup_name == BACKUP
    assert s.deadline == "2026-01-01T12:05:00Z"  # databaseCopy.timeout, 300 s
    assert f"recovering Cluster {COPY} from backup {BACKUP}" in s.message
    stayed(step(s, cnpg_world()), s, [bg.CopyDatabase(COPY, "kcdb", COPY, BACKUP, "cnpg")])


def test_the_cluster_is_asked_for_once_and_green_goes_on_it_when_ready() -> None:
    stored = status(bg.COPYING_DATABASE)
    stayed(step(stored, cnpg_world(copy_phase="pending")), stored, [])
    result = step(stored, cnpg_world(copy_phase="completed"))
    moved_to(result, bg.PROVISIONING_GREEN)
    result = step(result.status, cnpg_world())
    moved_to(result, bg.WAITING_FOR_GREEN)
    assert result.actions == [bg.ApplyGreen(GREEN, "b", COPY, apart=True)]


@pytest.mark.parametrize(
    ("phase", "deadline", "message"),
    [
        ("failed", "2026-01-01T12:05:00Z", f"database copy failed: see the status of Cluster {COPY}"),
        ("pending", "2026-01-01T11:59:59Z", f"database copy (Cluster {COPY}) not completed within 5m"),
    ],
)
def test_a_failed_or_late_cluster_rolls_back(phase: str, deadline: str, message: str) -> None:
    result = step(status(bg.COPYING_DATABASE, deadline=deadline), cnpg_world(copy_phase=phase))
    moved_to(result, bg.ROLLING_BACK)
    assert result.status is not None and result.status.message == message


@pytest.mark.parametrize("broken", [{"backup_name": ""}, {"copy_job": "kcdb-other"}])
def test_never_a_cluster_without_its_backup_or_other_than_greens(broken: dict[str, str]) -> None:
    result = step(status(bg.COPYING_DATABASE, **broken), cnpg_world())
    moved_to(result, bg.ROLLING_BACK)
    assert result.actions == []


def test_promotion_keeps_green_on_the_copy_and_rollback_with_blue_kept_returns_to_the_original() -> None:
    result = step(status(bg.PROMOTING), cnpg_world(blue=None, green=None, public_selector_track="b"))
    assert result.actions == [bg.AdoptAsCanonical(GREEN, "b", COPY)]
    kept = status(bg.COMPLETED)
    result = step(
        kept,
        cnpg_world(spec_image="quay.io/keycloak/keycloak:26.0.0", green=green(), public_selector_track="b"),
    )
    moved_to(result, bg.CANCELLING)
    result = step(result.status, cnpg_world(green=green(), public_selector_track="b"))
    assert result.actions == [bg.SwitchTraffic("a")]  # blue's pods never left the original Cluster


# --- the whole path against a simulated world, under any crash schedule ------------------------------------


@dataclass
class CnpgSim(CopySim):
    """Plays CloudNativePG: the Cluster appears on create, is healthy after the next tick."""

    recovered_from: list[str] = field(default_factory=list)
    canonical_database: str = "kcdb"

    def apply(self, a: bg.Action) -> None:
        if isinstance(a, bg.CopyDatabase):
            assert (a.tier, a.job) == ("cnpg", a.target)
            assert self.backups.get(a.backup) == "completed", "recovered only from a completed backup"
            self.recovered_from.append(a.backup)
        super().apply(a)


@settings(max_examples=100, deadline=None)
@given(
    crashes=st.lists(CRASHES, max_size=60),
    flips=st.lists(st.booleans(), max_size=40),
    tick=st.integers(1, 10),
    auto_teardown=st.booleans(),
)
def test_any_crash_schedule_recovers_one_cluster_and_green_runs_only_on_it(
    crashes: list[str], flips: list[bool], tick: int, auto_teardown: bool
) -> None:
    sim = CnpgSim()
    kw = {
        "upgrade_path": up.BLUE_GREEN_COPY,
        "database": "kcdb",
        "spec_database": "kcdb",
        "tier": "cnpg",
        "auto_teardown": auto_teardown,
    }
    final, seen = drive(sim, crashes, flips, tick=tick, **kw)
    assert final is not None and final.state == bg.COMPLETED, seen
    copy = cnpg_copy.copy_name("kcdb", GREEN, final.started_at)
    assert final.green_database == copy
    # A restart never creates a second Cluster (CopySim also refuses a second create of one name).
    assert [(source, target) for _, source, target in sim.job_creates] == [("kcdb", copy)]
    assert sim.recovered_from == [final.backup_name]
    assert sim.green_database == copy
    if auto_teardown:
        assert sim.canonical_database == copy  # promoted onto the copy
    else:
        assert sim.canonical_database == "kcdb"  # the kept blue stays on the untouched original


def test_a_cluster_never_getting_ready_fails_back_to_blue() -> None:
    sim = CnpgSim()

    def backup_completes(s: CopySim) -> None:
        s.backups = dict.fromkeys(s.backups, "completed")  # the backup completes, the Cluster never does

    kw = {"database": "kcdb", "spec_database": "kcdb", "tier": "cnpg", "copy_timeout_s": 60.0}
    assert_failed_back_to_blue(sim, run_until_rest(sim, backup_completes, **kw))


@pytest.mark.parametrize(
    "state", [bg.BACKING_UP, bg.COPYING_DATABASE, bg.PROVISIONING_GREEN, bg.WAITING_FOR_GREEN]
)
def test_a_database_changed_in_the_spec_before_cutover_cancels_green(state: str) -> None:
    """Found in review: adopting the last copy (clusterName set to it) while an upgrade ran put green, whose
    copy was of the original, on the Cluster blue serves from. Green goes instead."""
    result = step(status(state), cnpg_world(spec_database="kcdb-26-5-6-abcdef"))
    moved_to(result, bg.CANCELLING)
    assert result.status is not None and "spec's database changed" in result.status.message
