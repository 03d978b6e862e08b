"""A child the API server refuses is reported once on the Keycloak, not re-applied every pass."""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import reconcile, spec_problems
from keycloak_operator.core.common import conditions
from tests.unit.builders import observed, spec


def rejected_at(generation: int) -> dict[str, Any]:
    condition = {
        "type": conditions.DEGRADED,
        "status": "True",
        "reason": spec_problems.CHILD_REJECTED,
        "message": "Deployment PATCH ...: 422 spec.template.spec.containers[0].env[3].name: Invalid value",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "observedGeneration": generation,
    }
    return {"phase": "Degraded", "conditions": [condition]}


def decide(generation: int, status: dict[str, Any]) -> reconcile.Decision:
    s = spec()
    return reconcile.decide(s, observed(s, generation=generation, status=status), now="2026-01-01T00:01:00Z")


def test_a_refused_generation_is_not_applied_again_and_stays_degraded() -> None:
    decision = decide(3, rejected_at(3))
    assert decision.apply == []
    status = decision.status or rejected_at(3)
    degraded = next(c for c in status["conditions"] if c["type"] == conditions.DEGRADED)
    assert (degraded["status"], degraded["reason"]) == ("True", spec_problems.CHILD_REJECTED)


def test_a_new_generation_is_tried_again() -> None:
    assert decide(4, rejected_at(3)).apply != []
    assert decide(1, {}).apply != []


def test_several_problems_are_all_shown_and_each_told_once() -> None:
    """Two problems at once: the Degraded condition lists both (the first one's reason), each gets one
    Warning when it appears, and a pass that finds the same two says nothing again (an idle pass writes
    nothing). Before, only the first was shown, and the second was told again on every pass."""
    s = spec()
    foreign_service = {"kind": "Service", "metadata": {"name": "kc-service", "namespace": "ns"}}
    first = reconcile.decide(
        s,
        observed(s, existing_secrets=frozenset(), public_service=foreign_service),
        now="2026-01-01T00:01:00Z",
    )
    warnings = [e for e in first.events if e.type == "Warning"]
    assert len(warnings) >= 2 and len({e.message for e in warnings}) == len(warnings)
    status = first.status or {}
    degraded = next(c for c in status["conditions"] if c["type"] == conditions.DEGRADED)
    assert degraded["status"] == "True" and degraded["reason"] == warnings[0].reason
    assert all(e.message in degraded["message"] for e in warnings)
    again = reconcile.decide(
        s,
        observed(s, existing_secrets=frozenset(), public_service=foreign_service, status=status),
        now="2026-01-01T00:02:00Z",
    )
    assert [e for e in again.events if e.type == "Warning"] == []
    assert again.status is None
