"""Leaving rest (an upgrade starts, a kept blue goes, a failure is forgotten) and spec changes in flight."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from keycloak_operator.core import database_copy, upgrade_plan
from keycloak_operator.core.bluegreen import clock
from keycloak_operator.core.bluegreen.model import (
    BACKING_UP,
    CANCELLING,
    COMPLETED,
    FAILED,
    IDLE,
    PROMOTING,
    PROVISIONING_GREEN,
    TEARING_DOWN_BLUE,
    Event,
    Observed,
    Step,
)
from keycloak_operator.core.bluegreen.serving import backup_name, is_deleting
from keycloak_operator.core.bluegreen.steps import Deployment, Status, delete_green, go, rest
from keycloak_operator.core.rollout import image_of, track_of
from keycloak_operator.kernel import names


def at_rest(s: Status | None, w: Observed, now: datetime) -> Step:
    green_live = w.green is not None and not is_deleting(w.green)
    if s is not None and s.state == COMPLETED and green_live and track_of(w.green or {}) == s.green_track:
        return _completed_with_green(s, w, now)
    recovered = _traffic_on_green(s, w, now)
    if recovered is not None:
        return recovered
    if s is not None and s.state == FAILED:
        if w.spec_image == s.green_image:
            return rest(s)  # never retry the image that failed until the spec changes
        if w.blue is not None and w.spec_image == image_of(w.blue):
            return go(s, IDLE, now, f"spec is back to {w.spec_image}")
    if w.strategy != "BlueGreen" or w.blue is None or w.spec_image == image_of(w.blue):
        return rest(s)  # no blue: first creation is not an upgrade
    if w.upgrade_path not in MACHINE_PATHS:
        return rest(s)  # the planner chose another path (Recreate, Refuse): the reconcile carries it out
    return _begin(s if s is not None else Status(), w, w.blue, now)


# The planner's paths this machine carries out; the others are the reconcile's.
MACHINE_PATHS = (upgrade_plan.BLUE_GREEN_SHARED, upgrade_plan.BLUE_GREEN_COPY)


def path_of(s: Status) -> str:
    """The path of an upgrade in flight; one recorded by an operator before copies existed shared."""
    return s.path or upgrade_plan.BLUE_GREEN_SHARED


def _completed_with_green(s: Status, w: Observed, now: datetime) -> Step:
    """Completed with autoTeardown false: green serves under its own name and blue is kept."""
    if w.blue is None:
        return go(s, PROMOTING, now, "the kept blue was removed: promoting green to the canonical names")
    if track_of(w.blue) != s.blue_track:
        return rest(s)
    if w.spec_image == s.blue_image:
        return go(s, CANCELLING, now, f"spec is back to {s.blue_image}: traffic returns to the kept blue")
    if w.spec_image != s.green_image:
        return go(s, TEARING_DOWN_BLUE, now, f"new image {w.spec_image}: removing the kept blue first")
    return rest(s)


def _traffic_on_green(s: Status | None, w: Observed, now: datetime) -> Step | None:
    """Public traffic on a live green that no stored upgrade accounts for: status.blueGreen was lost after
    the cutover (a restore without status, a status edit). Beginning an upgrade from blue now would copy
    blue's stale database and move green onto it, discarding what users wrote through green since, and the
    reconcile would send traffic back to blue. The Deployments say where each colour runs and on which
    database: that is recorded as an upgrade completed with blue kept, which the usual ways leave (the spec
    back to blue's image: traffic returns to blue; another image: blue goes first; blue deleted: green is
    promoted)."""
    green, blue = w.green, w.blue
    if green is None or is_deleting(green) or blue is None:
        return None
    green_track = track_of(green)
    if not green_track or w.public_selector_track != green_track or track_of(blue) == green_track:
        return None
    green_database = database_copy.running_database(green, w.tier) or w.database
    copied = green_database != w.database
    message = (
        f"public traffic is on green ({image_of(green)}, track {green_track}) but no upgrade was recorded: "
        f"status.blueGreen was lost; recorded as completed with blue ({image_of(blue)}) kept"
    )
    return go(
        s if s is not None else Status(),
        COMPLETED,
        now,
        message,
        events=[Event("Warning", "BlueGreenStatusRecovered", message)],
        **_upgrade(
            w,
            upgrade_plan.BLUE_GREEN_COPY if copied else upgrade_plan.BLUE_GREEN_SHARED,
            green_database,
            blue,
            image_of(green),
            track_of(blue) or names.other_track(green_track),
            green_track,
        ),
        backup_name="",
        started_at="",
        deadline="",
    )


def _upgrade(
    w: Observed,
    path: str,
    green_database: str,
    blue: Deployment,
    green_image: str,
    blue_track: str,
    green_track: str,
) -> dict[str, Any]:
    """The fields every recorded upgrade sets afresh: its path, both colours and their databases, and no copy
    of an earlier upgrade's."""
    return {
        "path": path,
        "spec_database": w.spec_database,
        "blue_database": w.database,
        "green_database": green_database,
        "copy_job": "",
        "copy_started": "",
        "write_window_seconds": None,
        "blue_image": image_of(blue),
        "green_image": green_image,
        "blue_track": blue_track,
        "green_track": green_track,
    }


def _begin(s: Status, w: Observed, blue: Deployment, now: datetime) -> Step:
    blue_track = track_of(blue) or names.TRACKS[0]
    started = clock.stamp(now)
    path = w.upgrade_path or upgrade_plan.BLUE_GREEN_SHARED
    green_database = w.database
    if path == upgrade_plan.BLUE_GREEN_COPY:
        base = w.spec_database or w.database
        green_database = database_copy.green_copy_name(w.tier, base, w.spec_image, started)
    return go(
        s,
        BACKING_UP,
        now,
        f"upgrade {image_of(blue)} -> {w.spec_image} started ({path})",
        **_upgrade(w, path, green_database, blue, w.spec_image, blue_track, names.other_track(blue_track)),
        backup_name=backup_name(w.name, w.spec_image, started),
        started_at=started,
        deadline=clock.after(now, w.backup_timeout_s),
    )


def spec_changed(s: Status, w: Observed, now: datetime) -> Step | None:
    """Before cutover traffic is still on blue, so a new spec can cancel or replace the green in flight."""
    copied = path_of(s) == upgrade_plan.BLUE_GREEN_COPY
    if copied and s.spec_database and w.spec_database and w.spec_database != s.spec_database:
        # Green's copy was made of the spec's old database: under the new name green could land on a database
        # blue serves from. Green goes; at rest the new spec is planned afresh. (Only on a copy: a status an
        # older operator stored names cnpg's database, `app`, where this one names the Cluster.)
        return go(
            s,
            CANCELLING,
            now,
            f"cancelled: the spec's database changed from {s.spec_database} to {w.spec_database} during the "
            "upgrade",
        )
    if w.spec_image == s.blue_image:
        return go(s, CANCELLING, now, f"cancelled: spec is back to {s.blue_image}")
    if w.spec_image == s.green_image:
        return None
    if w.upgrade_path != upgrade_plan.BLUE_GREEN_SHARED:
        # The new image cannot share blue's database: green goes, and at rest the planner's path is taken.
        return go(
            s,
            CANCELLING,
            now,
            f"cancelled: {w.spec_image} cannot run beside {s.blue_image} ({w.upgrade_path})",
        )
    if path_of(s) != upgrade_plan.BLUE_GREEN_SHARED:
        # Green's database was copied for the image that is going: green goes, and the new image starts
        # over from rest on blue's database.
        return go(s, CANCELLING, now, f"cancelled: {w.spec_image} replaces {s.green_image}; starting over")
    message = f"green image replaced: {s.green_image} -> {w.spec_image}"
    if s.state == BACKING_UP:  # no green yet; the backup under way still precedes any green
        return go(s, BACKING_UP, now, message, green_image=w.spec_image)
    return go(s, PROVISIONING_GREEN, now, message, actions=delete_green(w), green_image=w.spec_image)
