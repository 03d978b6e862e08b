"""Building one Step: a transition (new state, history, event) or a stay (same status, maybe actions)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from keycloak_operator.core.bluegreen import clock
from keycloak_operator.core.bluegreen.model import (
    FAILED,
    ROLLING_BACK,
    Action,
    DeleteGreen,
    Event,
    EventType,
    Observed,
    Step,
)
from keycloak_operator.core.bluegreen.serving import is_deleting
from keycloak_operator.core.rollout import image_of, ready_replicas, rollout_complete
from keycloak_operator.models.upgrade_status import BlueGreenHistoryEntry, BlueGreenStatus

HISTORY_LIMIT = 20
# After an action: look again soon even if no event reports its effect (never a hot loop on a failed write).
ACTION_RECHECK_S = 1.0
# Waiting on something that may send no event we watch (backup objects, finalizers): the fallback timer.
POLL_S = 5.0
# Waiting for the EndpointSlice controller to list green as serving: usually well under a second.
SLICE_POLL_S = 0.5

Status = BlueGreenStatus
Deployment = dict[str, Any]


def go(
    s: Status,
    state: str,
    now: datetime,
    message: str,
    *,
    actions: Sequence[Action] = (),
    events: Sequence[Event] = (),
    **changes: Any,
) -> Step:
    """A transition: new state, a history entry, an event; call again at once (the next exit may hold)."""
    history = [*s.history, BlueGreenHistoryEntry(state=state, at=clock.stamp(now), message=message)]
    status = s.model_copy(
        update={**changes, "state": state, "message": message, "history": history[-HISTORY_LIMIT:]}
    )
    kind: EventType = "Warning" if state in (ROLLING_BACK, FAILED) else "Normal"
    return Step(status, list(actions), [*events, Event(kind, f"BlueGreen{state}", message)], 0.0)


def stay(s: Status, actions: Sequence[Action] = (), wait: float = POLL_S) -> Step:
    return Step(s, list(actions), [], ACTION_RECHECK_S if actions else wait)


def rest(s: Status | None) -> Step:
    return Step(s)


def delete_green(w: Observed) -> list[Action]:
    return [DeleteGreen()] if w.green is not None and not is_deleting(w.green) else []


def spec_replicas(d: Deployment) -> int:
    return int(d.get("spec", {}).get("replicas", 1))


def fully_ready(d: Deployment | None, w: Observed) -> bool:
    return d is not None and not is_deleting(d) and rollout_complete(d) and ready_replicas(d) == w.replicas


def green_ready(s: Status, w: Observed) -> bool:
    return w.green is not None and fully_ready(w.green, w) and image_of(w.green) == s.green_image


def green_serving(w: Observed) -> bool:
    """Green's Deployment status is not enough to switch traffic: the public Service's EndpointSlices are
    filled by the EndpointSlice controller, which can lag the Deployment controller on a loaded control
    plane; switching before it lists every green pod as serving left the public Service with no ready
    endpoint for a moment (seen: 0.6 s). Unread (None) counts as not serving: never switch blind."""
    return w.green_serving_endpoints is not None and w.green_serving_endpoints >= w.replicas
