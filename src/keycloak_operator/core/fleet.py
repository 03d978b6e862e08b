"""What the Keycloaks this operator runs look like from outside, counted for the metrics (the fleet gauges,
docs/guide/observability.md). Pure: each Keycloak's stored status in, bounded counts out.

Every label value is one of a fixed set, so a status written by hand (or by a future version) can never add
a series: an unknown phase counts as `Unknown`, an unknown upgrade state or plan path is not counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from pydantic import ValidationError

from keycloak_operator.core import upgrade_plan
from keycloak_operator.core.bluegreen import clock
from keycloak_operator.core.bluegreen.model import AT_REST, FAILED, STATES
from keycloak_operator.core.common import conditions
from keycloak_operator.models.keycloak import KeycloakStatus

PHASES: Final = ("Pending", "Running", "Upgrading", "Degraded", "Failed", "Unknown")
# The blue-green states an upgrade is under way in (the machine is neither at rest nor failed).
IN_FLIGHT: Final = tuple(s for s in STATES if s not in AT_REST)
# The paths the planner may store; None (no image change planned yet) is not a plan.
PLAN_PATHS: Final = tuple(p for p in upgrade_plan.PATHS if p != upgrade_plan.NONE)


@dataclass(frozen=True)
class Standing:
    """One Keycloak as its stored status shows it."""

    ready: bool
    phase: str  # one of PHASES
    upgrade_state: str = ""  # an IN_FLIGHT state or Failed; "" at rest
    entered: datetime | None = None  # when the machine entered upgrade_state (its history says)
    plan: str = ""  # one of PLAN_PATHS, or ""


def standing(status: Mapping[str, Any] | None) -> Standing:
    """Read off a stored status. One that does not parse (edited by hand) is a Keycloak not Ready."""
    try:
        parsed = KeycloakStatus.model_validate(dict(status or {}))
    except ValidationError:
        return Standing(ready=False, phase="Unknown")
    ready = conditions.find(parsed.conditions, conditions.READY)
    phase = parsed.phase if parsed.phase in PHASES else "Unknown"
    bg = parsed.blue_green
    state = bg.state if bg is not None and (bg.state in IN_FLIGHT or bg.state == FAILED) else ""
    entered = None
    if bg is not None and state:
        at = next((h.at for h in reversed(bg.history) if h.state == state), "")
        entered = clock.parse(at) if at else None
    plan = parsed.upgrade_plan.path if parsed.upgrade_plan is not None else ""
    return Standing(
        ready=ready is not None and ready.status == "True",
        phase=phase,
        upgrade_state=state,
        entered=entered,
        plan=plan if plan in PLAN_PATHS else "",
    )


@dataclass(frozen=True)
class Tally:
    """The fleet gauges' values. Every dict holds every key of its fixed set, zeros included, so a series
    drops to 0 instead of freezing at its last value."""

    not_ready: int = 0
    phases: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PHASES, 0))
    upgrades: dict[str, int] = field(default_factory=lambda: dict.fromkeys(IN_FLIGHT, 0))
    failed_upgrades: int = 0
    # The longest any Keycloak has been in each in-flight state so far (0 when none is in it).
    longest_in_state: dict[str, float] = field(default_factory=lambda: dict.fromkeys(IN_FLIGHT, 0.0))
    plans: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PLAN_PATHS, 0))


def tally(standings: Iterable[Standing], now: datetime) -> Tally:
    not_ready = failed = 0
    phases, plans = dict.fromkeys(PHASES, 0), dict.fromkeys(PLAN_PATHS, 0)
    upgrades, longest = dict.fromkeys(IN_FLIGHT, 0), dict.fromkeys(IN_FLIGHT, 0.0)
    for s in standings:
        phases[s.phase] += 1
        not_ready += not s.ready
        if s.plan:
            plans[s.plan] += 1
        if s.upgrade_state == FAILED:
            failed += 1
        elif s.upgrade_state:
            upgrades[s.upgrade_state] += 1
            if s.entered is not None:
                age = max((now - s.entered).total_seconds(), 0.0)
                longest[s.upgrade_state] = max(longest[s.upgrade_state], age)
    return Tally(not_ready, phases, upgrades, failed, longest, plans)
