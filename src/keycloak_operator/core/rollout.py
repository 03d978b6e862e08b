"""Reading a Deployment's rollout state, and whether a change must recreate for the cache cluster's sake.

Whether two versions may run side by side is the upgrade planner's (core/upgrade_plan.py); this module
adds one rule of its own: pods moving to another cache cluster never overlap, and a Recreate rollout is
never switched to rolling half way.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core.keycloak_config import STACK_ENV
from keycloak_operator.kernel import names


def _template(deployment: dict[str, Any]) -> dict[str, Any]:
    return dict(deployment.get("spec", {}).get("template", {}))


def image_of(deployment: dict[str, Any]) -> str:
    """The image as the spec named it: a Deployment pinned to the digest its preflight resolved says the
    reference it was pinned from (ADR 0024); otherwise its container's image."""
    annotations = deployment.get("metadata", {}).get("annotations", {}) or {}
    if annotations.get(names.ANNOTATION_IMAGE):
        return str(annotations[names.ANNOTATION_IMAGE])
    containers = _template(deployment).get("spec", {}).get("containers", [])
    return str(containers[0].get("image", "")) if containers else ""


def image_version_of(deployment: dict[str, Any]) -> str:
    """The Keycloak version its preflight read from the image ("" when none did)."""
    annotations = deployment.get("metadata", {}).get("annotations", {}) or {}
    return str(annotations.get(names.ANNOTATION_IMAGE_VERSION, ""))


def cache_cluster_of(deployment: dict[str, Any]) -> str | None:
    labels = _template(deployment).get("metadata", {}).get("labels", {}) or {}
    value = labels.get(names.LABEL_CACHE_CLUSTER)
    return str(value) if value else None


def keycloak_env(deployment: dict[str, Any] | None, variable: str) -> str | None:
    """The value a Deployment's Keycloak container (named `keycloak`, else the first) was rendered with for
    `variable`; None when it sets none."""
    containers = _template(deployment or {}).get("spec", {}).get("containers") or []
    container = next(
        (c for c in containers if c.get("name") == "keycloak"), containers[0] if containers else {}
    )
    for env in container.get("env") or []:
        if env.get("name") == variable:
            return str(env.get("value") or "")
    return None


def cache_stack_of(deployment: dict[str, Any]) -> str | None:
    """The JGroups stack the Deployment's Keycloak container was rendered with (KC_CACHE_STACK)."""
    return keycloak_env(deployment, STACK_ENV)


def track_of(deployment: dict[str, Any]) -> str | None:
    labels = deployment.get("metadata", {}).get("labels", {}) or {}
    value = labels.get(names.LABEL_TRACK)
    return str(value) if value else None


def version_of(deployment: dict[str, Any]) -> str:
    """The version string the Deployment was rendered for."""
    annotations = deployment.get("metadata", {}).get("annotations", {}) or {}
    return str(annotations.get(names.ANNOTATION_VERSION, ""))


def progress_deadline_exceeded(deployment: dict[str, Any]) -> bool:
    conditions = deployment.get("status", {}).get("conditions", []) or []
    return any(
        c.get("type") == "Progressing"
        and c.get("status") == "False"
        and c.get("reason") == "ProgressDeadlineExceeded"
        for c in conditions
    )


def ready_replicas(deployment: dict[str, Any] | None) -> int:
    if deployment is None:
        return 0
    return int(deployment.get("status", {}).get("readyReplicas", 0) or 0)


def rollout_complete(deployment: dict[str, Any] | None) -> bool:
    """True when the controller has seen the latest spec and every replica runs it and is available."""
    if deployment is None:
        return False
    meta, spec, status = (
        deployment.get("metadata", {}),
        deployment.get("spec", {}),
        deployment.get("status", {}),
    )
    want = int(spec.get("replicas", 1))
    return (
        int(status.get("observedGeneration", 0)) >= int(meta.get("generation", 0))
        and int(status.get("updatedReplicas", 0) or 0) == want
        and int(status.get("replicas", 0) or 0) == want
        and int(status.get("availableReplicas", 0) or 0) == want
        and int(status.get("readyReplicas", 0) or 0) == want
    )


def use_recreate(
    observed: dict[str, Any] | None, cache_cluster: str | None, stack: str | None = None
) -> bool:
    """Recreate for the cache cluster's sake: pods moving to another cache cluster, or to another JGroups
    stack (Keycloak: changing the cache stack needs a recreate), must not overlap. Whether the versions
    themselves allow old and new side by side is the upgrade planner's call. `stack`: None, not compared."""
    if observed is None:
        return False
    strategy = observed.get("spec", {}).get("strategy", {}).get("type")
    if strategy == "Recreate" and not rollout_complete(observed):
        return True  # never switch strategy in the middle of a Recreate rollout
    moved_stack = stack is not None and cache_stack_of(observed) not in (None, stack)
    return cache_cluster_of(observed) != cache_cluster or moved_stack
