"""The blue-green transition function: (stored status, observed world, now) -> Step.

One call advances at most one state. The shell persists the returned status BEFORE performing the actions,
and on the next pass calls `step` again with the status read back from the stored object; so a crash right
after persisting repeats only the actions of the state it resumes in, and each of those is idempotent.

state              | world                                      | actions              | next
-------------------|--------------------------------------------|----------------------|-------------------
at rest            | BlueGreen, blue exists, spec image != blue | -                    | BackingUp
  Failed           | spec image == the image that failed        | -                    | Failed (no retry)
  Failed           | spec image == blue's image                 | -                    | Idle
  Completed, green | blue kept: spec == blue's image            | -                    | Cancelling
  still named green| blue kept: a third image                   | -                    | TearingDownBlue
                   | the kept blue was removed by the user      | -                    | Promoting
before cutover     | spec image == blue's image                 | -                    | Cancelling
  (the 3 below)    | spec image is a third image                | DeleteGreen          | ProvisioningGreen
BackingUp          | tier cannot back up (external, no PVC)     | Warning NoBackup     | ProvisioningGreen *
                   | backup completed                           | -                    | ProvisioningGreen *
                   | backup failed, or deadline passed          | -                    | RollingBack
                   | no backup object yet                       | CreateBackup         | BackingUp
CopyingDatabase    | no Job or target recorded, target == source | -                   | RollingBack
  (BlueGreenCopy;  | cnpg: no backup, or Cluster != target      | -                    | RollingBack
  cnpg: the copy   | no copy Job (Cluster) of the recorded name | CopyDatabase         | CopyingDatabase
  is a Cluster     | copy Job complete (Cluster healthy)        | -                    | ProvisioningGreen
  from the backup) | copy failed, or deadline passed            | -                    | RollingBack
ProvisioningGreen  | a green of another image/track exists      | DeleteGreen          | ProvisioningGreen
                   | otherwise                                  | ApplyGreen           | WaitingForGreen
WaitingForGreen    | green missing (crash, or deleted by hand)   | ApplyGreen           | WaitingForGreen
                   | green being deleted                        | -                    | WaitingForGreen
                   | green fully Ready, not yet all serving in  | - (poll 0.5 s)       | WaitingForGreen
                   |   green's EndpointSlices                   |                      |
                   | green fully Ready with green's image and   | -                    | CuttingOver
                   |   every pod serving in its EndpointSlices  |                      |
                   | deadline passed                            | -                    | RollingBack
CuttingOver        | selector on blue, green no longer Ready or | -                    | WaitingForGreen
                   |   no longer all serving                    |                      |
                   | selector on blue                           | SwitchTraffic(green) | CuttingOver
                   | selector on green                          | -                    | Draining, or
                   |                                            |                      | Completed (keep)
Draining           | drain delay over                           | -                    | TearingDownBlue
TearingDownBlue    | blue exists                                | DeleteBlue           | TearingDownBlue
                   | blue gone                                  | -                    | Promoting
Promoting          | green exists                               | OrphanGreen          | Promoting
                   | green gone, canonical missing              | AdoptAsCanonical     | Promoting
                   | canonical Ready, green discovery exists    | DeleteGreenDiscovery | Promoting
                   | canonical Ready, no green discovery        | -                    | Completed
* BlueGreenCopy: CopyingDatabase instead, green on its own copy of blue's database from then on; at the
  cutover the write window (copy asked for -> traffic on green) is recorded and reported.
RollingBack,       | selector not on blue                       | SwitchTraffic(blue)  | (same)
  Cancelling       | green or green discovery exist             | DeleteGreen(Disc.)   | (same)
                   | all clean                                  | -                    | Failed / Idle
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from keycloak_operator.core import database_copy, upgrade_plan
from keycloak_operator.core.bluegreen import clock
from keycloak_operator.core.bluegreen.entry import at_rest, path_of, spec_changed
from keycloak_operator.core.bluegreen.model import (
    AT_REST,
    BACKING_UP,
    BEFORE_CUTOVER,
    CANCELLING,
    COMPLETED,
    COPYING_DATABASE,
    CUTTING_OVER,
    DRAINING,
    FAILED,
    IDLE,
    PROMOTING,
    PROVISIONING_GREEN,
    ROLLING_BACK,
    TEARING_DOWN_BLUE,
    WAITING_FOR_GREEN,
    AdoptAsCanonical,
    ApplyGreen,
    CopyDatabase,
    CreateBackup,
    DeleteBlue,
    DeleteGreen,
    DeleteGreenDiscovery,
    Event,
    Observed,
    OrphanGreen,
    Step,
    SwitchTraffic,
)
from keycloak_operator.core.bluegreen.serving import is_deleting, uid_of
from keycloak_operator.core.bluegreen.steps import (
    POLL_S,
    SLICE_POLL_S,
    Status,
    delete_green,
    fully_ready,
    go,
    green_ready,
    green_serving,
    spec_replicas,
    stay,
)
from keycloak_operator.core.durations import format_seconds
from keycloak_operator.core.rollout import image_of, track_of
from keycloak_operator.kernel import names


def step(stored: Status | None, world: Observed, now: datetime) -> Step:
    """The next step from the status READ BACK from the stored object; advances at most one state."""
    now = clock.utc(now)
    if stored is None or stored.state in AT_REST:
        return at_rest(stored, world, now)
    if stored.state in BEFORE_CUTOVER:
        changed = spec_changed(stored, world, now)
        if changed is not None:
            return changed
    handler = _HANDLERS.get(stored.state)
    if handler is None:
        # Refuse rather than guess: any guess could delete what is serving.
        raise ValueError(f"unknown blue-green state {stored.state!r}")
    return handler(stored, world, now)


# --- one handler per state in flight ------------------------------------------------------------------------


def _backing_up(s: Status, w: Observed, now: datetime) -> Step:
    if not w.backup_possible:
        what = "managed tier without pvcName" if w.tier == "managed" else f"{w.tier} tier"
        warning = Event("Warning", "NoBackup", f"{what}: no backup can be taken; upgrading without one")
        return _backed_up(s, w, now, f"no backup ({what})", [warning], backup_name="")
    if w.backup_phase == "completed":
        return _backed_up(s, w, now, f"backup {s.backup_name} completed", [], s.backup_name)
    if w.backup_phase == "failed":
        return go(s, ROLLING_BACK, now, f"backup {s.backup_name} failed")
    if clock.expired(s.deadline, now):
        timeout = format_seconds(w.backup_timeout_s)
        return go(s, ROLLING_BACK, now, f"backup {s.backup_name} not completed within {timeout}")
    # Exactly once: only while no object of the recorded name exists; the create itself is by that name.
    actions = [CreateBackup(s.backup_name, w.tier, s.blue_database)] if w.backup_phase is None else []
    return stay(s, actions, min(clock.remaining(s.deadline, now), POLL_S))


def _backed_up(
    s: Status, w: Observed, now: datetime, message: str, events: list[Event], backup_name: str
) -> Step:
    """After the backup (or without one): green's own database is copied first on the copy path."""
    if path_of(s) != upgrade_plan.BLUE_GREEN_COPY:
        return go(s, PROVISIONING_GREEN, now, message, events=events, backup_name=backup_name)
    started = clock.stamp(now)
    # cnpg: the copy is the Cluster recovered from this backup, named already when the upgrade started.
    cnpg = w.tier == "cnpg"
    job = s.green_database if cnpg else database_copy.job_name(w.name, s.green_database, started)
    what = f"recovering Cluster {s.green_database} from backup {backup_name}" if cnpg else "copying database"
    return go(
        s,
        COPYING_DATABASE,
        now,
        f"{message}; {what} ({s.blue_database} -> {s.green_database}) for green",
        events=events,
        copy_job=job,
        copy_started=started,
        deadline=clock.after(now, w.copy_timeout_s),
        backup_name=backup_name,
    )


def _copying_database(s: Status, w: Observed, now: datetime) -> Step:
    cnpg = w.tier == "cnpg"
    if not (s.copy_job and s.green_database) or s.green_database == s.blue_database:
        # A status edited by hand: never create an unnamed Job, never copy a database onto itself.
        return go(s, ROLLING_BACK, now, "the database copy's Job or target is missing from status")
    if cnpg and (not s.backup_name or s.copy_job != s.green_database):
        # Never a Cluster without the backup it recovers, nor one other than the Cluster green will use.
        return go(s, ROLLING_BACK, now, "the cnpg copy's backup or Cluster is missing from status")
    what = f"Cluster {s.copy_job}" if cnpg else f"Job {s.copy_job}"
    if w.copy_phase == "completed":
        done = f"Cluster {s.green_database} recovered from backup {s.backup_name}" if cnpg else "copied"
        return go(s, PROVISIONING_GREEN, now, f"database {s.blue_database} {done} -> {s.green_database}")
    if w.copy_phase == "failed":
        where = f"the status of {what}" if cnpg else f"the logs of {what}"
        return go(s, ROLLING_BACK, now, f"database copy failed: see {where}")
    if clock.expired(s.deadline, now):
        timeout = format_seconds(w.copy_timeout_s)
        return go(s, ROLLING_BACK, now, f"database copy ({what}) not completed within {timeout}")
    # Exactly once: only while nothing of the recorded name exists; the create itself is by that name, so a
    # restart that repeats it finds the one already made.
    copy = CopyDatabase(s.copy_job, s.blue_database, s.green_database)
    if cnpg:
        copy = CopyDatabase(s.copy_job, s.blue_database, s.green_database, s.backup_name, "cnpg")
    actions = [copy] if w.copy_phase is None else []
    return stay(s, actions, min(clock.remaining(s.deadline, now), POLL_S))


def _provisioning_green(s: Status, w: Observed, now: datetime) -> Step:
    g = w.green
    if g is not None and is_deleting(g):
        return stay(s)  # a previous green is still going away
    if g is not None and (image_of(g) != s.green_image or track_of(g) != s.green_track):
        return stay(s, [DeleteGreen()])  # left over from a replaced green
    return go(
        s,
        WAITING_FOR_GREEN,
        now,
        f"green {names.deployment(w.name, green=True)} applied with {s.green_image}",
        actions=[_apply_green(s)],
        deadline=clock.after(now, w.green_ready_timeout_s),
    )


def _waiting_for_green(s: Status, w: Observed, now: datetime) -> Step:
    g = w.green
    if g is None:
        # The apply that came with entering this state was cut off (or someone deleted green): redo it in
        # place, under the same deadline, so a resumed upgrade does not walk back through the table.
        return stay(s, [_apply_green(s)])
    if is_deleting(g):
        return stay(s)
    ready = green_ready(s, w)
    if ready and green_serving(w):
        return go(s, CUTTING_OVER, now, f"green Ready and serving: {w.replicas}/{w.replicas} replicas")
    if clock.expired(s.deadline, now):
        timeout = format_seconds(w.green_ready_timeout_s)
        return go(s, ROLLING_BACK, now, f"green not Ready within {timeout}")
    if ready:  # the EndpointSlice controller has not caught up; it sends no event the operator watches
        return stay(s, wait=min(SLICE_POLL_S, clock.remaining(s.deadline, now)))
    if spec_replicas(g) != w.replicas:
        return stay(s, [_apply_green(s)])  # scaled during the upgrade
    return stay(s, wait=clock.remaining(s.deadline, now))  # green's events wake us sooner


def _cutting_over(s: Status, w: Observed, now: datetime) -> Step:
    if w.public_selector_track != s.green_track:
        if not (green_ready(s, w) and green_serving(w)):  # traffic has not moved: wait again, same deadline
            return go(s, WAITING_FOR_GREEN, now, "green lost readiness before the switch")
        return stay(s, [SwitchTraffic(s.green_track)])
    window = _write_window(s, now)
    if w.auto_teardown:
        delay = format_seconds(w.drain_delay_s)
        message = f"traffic on green (track {s.green_track}); blue goes in {delay}"
        return go(s, DRAINING, now, message, deadline=clock.after(now, w.drain_delay_s), **window)
    message = f"traffic on green (track {s.green_track}); blue kept (autoTeardown false)"
    return go(s, COMPLETED, now, message, **window)


def _write_window(s: Status, now: datetime) -> dict[str, Any]:
    """BlueGreenCopy: from the copy to the cutover, blue's writes did not reach green's database. Measured
    from when the copy was asked for (before the dump began), so it errs long."""
    started = clock.parse(s.copy_started) if s.copy_started else None
    if path_of(s) != upgrade_plan.BLUE_GREEN_COPY or started is None:
        return {}
    seconds = max(0, round((now - started).total_seconds()))
    message = (
        f"writes made on blue ({s.blue_database}) from {s.copy_started} to the cutover, {seconds} s, are not "
        f"in green's database {s.green_database}"
    )
    return {"write_window_seconds": seconds, "events": [Event("Normal", "WriteWindow", message)]}


def _apply_green(s: Status) -> ApplyGreen:
    copy = path_of(s) == upgrade_plan.BLUE_GREEN_COPY
    return ApplyGreen(s.green_image, s.green_track, s.green_database, apart=copy)


def _draining(s: Status, w: Observed, now: datetime) -> Step:
    if not clock.expired(s.deadline, now):
        return stay(s, wait=clock.remaining(s.deadline, now))
    return go(s, TEARING_DOWN_BLUE, now, f"drain delay over: deleting {names.deployment(w.name)}")


def _tearing_down_blue(s: Status, w: Observed, now: datetime) -> Step:
    b = w.blue
    if b is None:
        return go(s, PROMOTING, now, "blue deleted: promoting green to the canonical names")
    if is_deleting(b):
        return stay(s)
    return stay(s, [DeleteBlue(uid_of(b))])


def _promoting(s: Status, w: Observed, now: datetime) -> Step:
    """Rename without restart: orphan green's ReplicaSet, then let the canonical Deployment adopt it."""
    b, g = w.blue, w.green
    if b is not None and track_of(b) != s.green_track:
        return go(s, TEARING_DOWN_BLUE, now, "a blue canonical Deployment reappeared: deleting it")
    if g is not None:
        return stay(s) if is_deleting(g) else stay(s, [OrphanGreen(uid_of(g))])
    if b is None:
        return stay(s, [AdoptAsCanonical(s.green_image, s.green_track, s.green_database)])
    if not fully_ready(b, w):
        return stay(s)
    # Only now: pods rendered before ADR 0018 query it until the adoption is done (newer ones query their
    # track's membership Service, which the reconcile keeps).
    if w.green_discovery_exists:
        return stay(s, [DeleteGreenDiscovery()])
    return go(s, COMPLETED, now, f"green promoted to {names.deployment(w.name)}")


def _unwind(s: Status, w: Observed, now: datetime, end: str, message: str) -> Step:
    """Traffic back to blue first, then green goes; backups are never deleted."""
    if w.public_selector_track != s.blue_track:
        return stay(s, [SwitchTraffic(s.blue_track)])
    actions = [*delete_green(w), *([DeleteGreenDiscovery()] if w.green_discovery_exists else [])]
    if actions:
        return stay(s, actions)
    if w.green is not None:
        return stay(s)  # still being deleted
    return go(s, end, now, message)


def _rolling_back(s: Status, w: Observed, now: datetime) -> Step:
    return _unwind(s, w, now, FAILED, s.message)


def _cancelling(s: Status, w: Observed, now: datetime) -> Step:
    return _unwind(s, w, now, IDLE, f"cancelled: {s.blue_image} serves")


_HANDLERS: dict[str, Callable[[Status, Observed, datetime], Step]] = {
    BACKING_UP: _backing_up,
    COPYING_DATABASE: _copying_database,
    PROVISIONING_GREEN: _provisioning_green,
    WAITING_FOR_GREEN: _waiting_for_green,
    CUTTING_OVER: _cutting_over,
    DRAINING: _draining,
    TEARING_DOWN_BLUE: _tearing_down_blue,
    PROMOTING: _promoting,
    ROLLING_BACK: _rolling_back,
    CANCELLING: _cancelling,
}
