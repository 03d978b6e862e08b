"""The Jobs the operator runs (the compatibility check, the database copy): the one shape they share, and how
one ended, read from its own conditions (the one contract batch/v1 gives)."""

from __future__ import annotations

from typing import Any, NamedTuple

from keycloak_operator.core.children import Owner
from keycloak_operator.kernel import names


def one_try(
    owner: Owner,
    name: str,
    component: str,
    pod_spec: dict[str, Any],
    deadline_s: int,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A Job owned by the Keycloak that runs `pod_spec` once (never retried: the operator reads its outcome
    and decides) and is ended by Kubernetes after `deadline_s`, so one given up on holds nothing past it.
    `spec`: more Job spec fields (a pod failure policy)."""
    labels = names.component_labels(owner.name, component)
    metadata: dict[str, Any] = {"name": name, "namespace": owner.namespace, "labels": labels}
    if annotations:
        metadata["annotations"] = dict(annotations)
    metadata["ownerReferences"] = [owner.reference()]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": max(1, deadline_s),
            **spec,
            # None of the operator's Jobs talks to the API server, and they run images a tenant chose.
            "template": {
                "metadata": {"labels": labels},
                "spec": {"restartPolicy": "Never", "automountServiceAccountToken": False, **pod_spec},
            },
        },
    }


class Ended(NamedTuple):
    succeeded: bool
    reason: str  # the Failed condition's reason (PodFailurePolicy, BackoffLimitExceeded, ...); "" on success


def ended(obj: dict[str, Any]) -> Ended | None:
    """The Job's terminal condition; None while it runs."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Complete":
            return Ended(True, "")
        if condition.get("type") == "Failed":
            return Ended(False, str(condition.get("reason") or ""))
    return None
