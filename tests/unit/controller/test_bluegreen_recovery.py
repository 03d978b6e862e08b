"""status.blueGreen lost after the cutover: the machine reads the colours from the Deployments instead of
beginning an upgrade from blue's stale database (core/bluegreen/entry.py, _traffic_on_green)."""

from __future__ import annotations

from typing import Any

import pytest

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import upgrade_plan as up
from keycloak_operator.models.upgrade_status import BlueGreenStatus
from tests.unit.controller.test_bluegreen import BLUE, GREEN, THIRD, green, moved_to, status, step
from tests.unit.controller.test_bluegreen_copy import GREEN_DB, copy_world


def on_database(deployment: dict[str, Any], database: str) -> dict[str, Any]:
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container.update(name="keycloak", env=[{"name": "KC_DB_URL_DATABASE", "value": database}])
    return deployment


def lost(**kw: Any) -> bg.Observed:
    """After a copy-path cutover: green on its copy serves, blue kept on its own database."""
    base: dict[str, Any] = {"green": on_database(green(), GREEN_DB), "public_selector_track": "b"}
    return copy_world(**{**base, **kw})


@pytest.mark.parametrize("stored", [None, status(bg.IDLE), status(bg.FAILED, green_image=THIRD)])
def test_traffic_on_green_without_a_recorded_upgrade_is_recorded_as_completed_with_blue_kept(
    stored: BlueGreenStatus | None,
) -> None:
    result = step(stored, lost())
    moved_to(result, bg.COMPLETED)
    assert result.actions == []  # nothing moves: no backup, no copy of blue's stale database, no new green
    assert ("Warning", "BlueGreenStatusRecovered") in [(e.type, e.reason) for e in result.events]
    s = result.status
    assert s is not None
    assert (s.blue_image, s.green_image, s.blue_track, s.green_track) == (BLUE, GREEN, "a", "b")
    assert (s.path, s.blue_database, s.green_database) == (up.BLUE_GREEN_COPY, "keycloak", GREEN_DB)


def test_green_on_blues_database_is_recorded_as_shared() -> None:
    result = step(None, lost(green=on_database(green(), "keycloak")))
    assert result.status is not None
    assert (result.status.path, result.status.green_database) == (up.BLUE_GREEN_SHARED, "keycloak")


def test_once_recorded_the_usual_ways_out_apply() -> None:
    recorded = step(None, lost()).status
    # The spec back to blue's image: traffic returns to the kept blue on its untouched database.
    moved_to(step(recorded, lost(spec_image=BLUE)), bg.CANCELLING)
    # Another image: blue goes first, then green is promoted; never a copy of blue's stale database.
    moved_to(step(recorded, lost(spec_image=THIRD)), bg.TEARING_DOWN_BLUE)
    # The same image: at rest.
    assert step(recorded, lost()).status == recorded


@pytest.mark.parametrize(
    "world",
    [
        {"public_selector_track": "a"},  # traffic on blue: a leftover green is not serving
        {"public_selector_track": None},  # no public Service yet
        {"green": None},
        {"green": on_database(green(deleting=True), GREEN_DB)},
    ],
)
def test_traffic_on_blue_begins_the_upgrade_as_before(world: dict[str, Any]) -> None:
    moved_to(step(None, lost(**world)), bg.BACKING_UP)
