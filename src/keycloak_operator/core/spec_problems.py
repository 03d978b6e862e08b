"""What keeps pods from being rolled, judged from the spec and what exists: a child the API server refused
for this very generation, a referenced Secret or ConfigMap missing, an environment variable the operator
manages. Pure; core/reconcile.py asks it every pass."""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import keycloak_config
from keycloak_operator.core.children import Owner
from keycloak_operator.core.common import conditions
from keycloak_operator.models.keycloak import KeycloakSpec, KeycloakStatus

CHILD_REJECTED = "ChildRejected"


def rejected_child(previous: KeycloakStatus, generation: int) -> conditions.Wanted | None:
    """The API server refused a child made from this very generation of the spec (the shell records it as a
    Degraded condition): applying again could only be refused again, so nothing is applied until the spec
    changes."""
    old = conditions.find(previous.conditions, conditions.DEGRADED)
    if old is None or old.reason != CHILD_REJECTED or old.observed_generation != generation:
        return None
    return conditions.Wanted(conditions.DEGRADED, "True", CHILD_REJECTED, old.message)


def problems(
    spec: KeycloakSpec,
    keycloak: dict[str, Any],
    existing_secrets: frozenset[str],
    existing_config_maps: frozenset[str],
    owner: Owner,
    secret: str,
) -> list[conditions.Wanted]:
    """What only the operator can judge; any of these blocks rolling pods that could not start."""
    problems = []
    generation = int(keycloak["metadata"].get("generation", 0))
    rejected = rejected_child(KeycloakStatus.model_validate(keycloak.get("status") or {}), generation)
    if rejected is not None:
        problems.append(rejected)
    generated = spec.admin_secret is None
    missing = [
        s
        for s in keycloak_config.referenced_secrets(spec, secret)
        if s not in existing_secrets and not (generated and s == secret)
    ]
    if missing:
        problems.append(
            conditions.Wanted(
                conditions.DEGRADED,
                "True",
                "SecretNotFound",
                f"Secret(s) {', '.join(sorted(missing))} not found in namespace {owner.namespace}; "
                "pods are not rolled until they exist",
            )
        )
    missing_maps = [m for m in keycloak_config.referenced_config_maps(spec) if m not in existing_config_maps]
    if missing_maps:
        problems.append(
            conditions.Wanted(
                conditions.DEGRADED,
                "True",
                "ConfigMapNotFound",
                f"ConfigMap(s) {', '.join(sorted(missing_maps))} not found in namespace {owner.namespace}; "
                "pods are not rolled until they exist",
            )
        )
    reserved = keycloak_config.reserved_env_conflicts(spec)
    if reserved:
        problems.append(
            conditions.Wanted(
                conditions.DEGRADED,
                "True",
                "ReservedEnv",
                f"spec sets {', '.join(reserved)}, which the operator manages; remove them (the spec has a "
                "field for each)",
            )
        )
    return problems
