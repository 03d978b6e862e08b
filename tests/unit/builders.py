"""The inputs unit tests build again and again, in one place: a valid Keycloak spec, its owner and stored
object, the `Observed` a reconcile pass starts from, and the managedFields of an applied object.

Tests that need something else (another image, replicas, policy) still say so where they build it.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import children, versions
from keycloak_operator.core.decide_inputs import Observed
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.models.keycloak import KeycloakSpec

IMAGE = "quay.io/keycloak/keycloak:26.7.3"
BASE: dict[str, Any] = {"image": IMAGE, "database": {"cnpg": {"clusterName": "db"}}}
OWNER = children.Owner(name="kc", namespace="ns", uid="u1")
# The Secrets BASE refers to: the database's (CNPG's `<cluster>-app`) and the generated admin Secret.
SECRETS = frozenset({"db-app", "kc-initial-admin"})
NOW = "2026-01-01T00:00:00Z"


def spec(**kw: Any) -> KeycloakSpec:
    """BASE with `kw` laid over it (top-level fields, wire names)."""
    return KeycloakSpec.model_validate({**BASE, **kw})


def keycloak(
    s: KeycloakSpec,
    *,
    generation: int = 1,
    status: dict[str, Any] | None = None,
    owner: children.Owner = OWNER,
) -> dict[str, Any]:
    """The Keycloak as stored: `s` on the wire, and `status` when given."""
    meta = {"name": owner.name, "namespace": owner.namespace, "uid": owner.uid, "generation": generation}
    stored: dict[str, Any] = {"metadata": meta, "spec": s.wire()}
    if status is not None:
        stored["status"] = status
    return stored


def observed(
    s: KeycloakSpec,
    *,
    deployment: dict[str, Any] | None = None,
    public_service: dict[str, Any] | None = None,
    generation: int = 1,
    status: dict[str, Any] | None = None,
    owner: children.Owner = OWNER,
    existing_secrets: frozenset[str] = SECRETS,
    **fields: Any,
) -> Observed:
    """What the shell would read for the Keycloak of spec `s`: no Services yet, the Secrets it refers to,
    the version of `s`; `fields` sets any other field of Observed (green, ingress, network_policies, ...)."""
    return Observed(
        keycloak=keycloak(s, generation=generation, status=status, owner=owner),
        deployment=deployment,
        public_service=public_service,
        existing_secrets=existing_secrets,
        version=versions.version_of(s).format(),
        **fields,
    )


def deployment(s: KeycloakSpec) -> dict[str, Any]:
    """The Deployment the operator renders for `s` (its own image, track a, version v)."""
    return render_deployment(OWNER, s, image=s.image, track="a", version="v")


def pod(s: KeycloakSpec) -> dict[str, Any]:
    return dict(deployment(s)["spec"]["template"]["spec"])


def container(s: KeycloakSpec) -> dict[str, Any]:
    """The Keycloak container (the pod's only one)."""
    (only,) = pod(s)["containers"]
    return dict(only)


def fields_v1(obj: Any) -> Any:
    """The fieldsV1 tree a manager that applied `obj` owns: maps granular, lists and scalars as leaves."""
    if isinstance(obj, dict):
        return {f"f:{k}": fields_v1(v) for k, v in obj.items()}
    return {}


def crd_schema(kind: str) -> dict[str, Any]:
    """The openAPIV3Schema `properties` of one replicated kind's CRD, as generated from its declaration."""
    from keycloak_operator.models.crd import replicated_crd
    from keycloak_operator.models.kinds import BY_KIND

    return replicated_crd(BY_KIND[kind])["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
