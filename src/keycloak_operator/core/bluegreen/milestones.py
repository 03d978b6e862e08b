"""What a stored blue-green transition means to someone watching from outside: the upgrade milestones it
passes (for metrics) and how long the machine stayed in the state it left. Pure, read off two statuses."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from keycloak_operator.core.bluegreen.model import (
    AT_REST,
    CANCELLING,
    COMPLETED,
    FAILED,
    ROLLING_BACK,
)
from keycloak_operator.models.upgrade_status import BlueGreenStatus

STARTED = "started"
COMPLETED_EVENT = "completed"
FAILED_EVENT = "failed"
ROLLED_BACK = "rolled_back"
CANCELLED = "cancelled"
MILESTONES = (STARTED, COMPLETED_EVENT, FAILED_EVENT, ROLLED_BACK, CANCELLED)


@dataclass(frozen=True)
class Transition:
    milestones: tuple[str, ...]
    left: str | None  # the in-flight state the machine left (None when it left a state at rest)
    seconds_in_left: float | None


def transition(old: BlueGreenStatus | None, new: BlueGreenStatus) -> Transition:
    """`old` is the status stored before the pass, `new` the one just stored; same state: nothing."""
    before = old.state if old is not None else "Idle"
    if before == new.state:
        return Transition((), None, None)
    milestones: list[str] = []
    if before in AT_REST and new.state not in AT_REST:
        milestones.append(STARTED)
    if new.state == COMPLETED:
        milestones.append(COMPLETED_EVENT)
    if new.state == ROLLING_BACK:
        milestones.append(ROLLED_BACK)
    if new.state == CANCELLING:
        milestones.append(CANCELLED)
    if new.state == FAILED:
        milestones.append(FAILED_EVENT)
    if before in AT_REST or old is None:
        return Transition(tuple(milestones), None, None)
    return Transition(tuple(milestones), before, _time_in(old, new))


def _time_in(old: BlueGreenStatus, new: BlueGreenStatus) -> float | None:
    """From the history entry that entered the old state to the one that left it (second resolution)."""
    entered = next((h.at for h in reversed(old.history) if h.state == old.state), None)
    left = new.history[-1].at if new.history and new.history[-1].state == new.state else None
    if entered is None or left is None:
        return None
    try:
        seconds = (datetime.fromisoformat(left) - datetime.fromisoformat(entered)).total_seconds()
    except ValueError:
        return None
    return max(seconds, 0.0)
