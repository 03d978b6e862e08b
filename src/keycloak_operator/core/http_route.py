"""The Keycloak's HTTPRoute: a pure rendering of `spec.httpRoute`, what the installation allows of it, and
what status says when the cluster cannot have one.

It routes exactly what the Ingress routes (core/ingress.public_route: one path prefix to the public
Service's serving port, never the management port), so the two ways in never differ in what they expose.
Whether the cluster serves the Gateway API is a fact the shell observes and passes in, as it does for the
ServiceMonitor: asked for where it is not served, no route is rendered, the Keycloak is Degraded naming
spec.httpRoute, and nothing else waits for it.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import children, ingress, ingress_policy, service_policy
from keycloak_operator.core.common import conditions
from keycloak_operator.kernel import names
from keycloak_operator.models.http_route import NO_HOST_MESSAGE, repeated_parent
from keycloak_operator.models.keycloak import KeycloakSpec

GROUP = "gateway.networking.k8s.io"
VERSION = "v1"
PLURAL = "httproutes"
KIND = "HTTPRoute"
REASON = "HTTPRouteNotAllowed"
UNAVAILABLE = "HTTPRouteUnavailable"


def wanted(spec: KeycloakSpec) -> bool:
    """Asked for in the spec, whether or not the cluster can have one."""
    return spec.http_route is not None and spec.http_route.enabled


def hostnames(spec: KeycloakSpec) -> list[str]:
    """The hosts routed: the spec's, else the host of spec.hostname as the Ingress takes it, else none."""
    if spec.http_route is not None and spec.http_route.hostnames:
        return list(spec.http_route.hostnames)
    if spec.http_route is None:
        return []
    return ingress.hosts(spec.model_copy(update={"ingress": None}))


def gateways(spec: KeycloakSpec, namespace: str) -> list[str]:
    """The Gateways the route attaches to, as `namespace/name` (an unset namespace is the Keycloak's)."""
    if spec.http_route is None:
        return []
    return [f"{ref.namespace or namespace}/{ref.name}" for ref in spec.http_route.parent_refs]


def http_route(spec: KeycloakSpec, owner: children.Owner) -> dict[str, Any] | None:
    """The HTTPRoute `spec.httpRoute` asks for; None when there is to be none."""
    wanted_route = spec.http_route
    if wanted_route is None or not wanted_route.enabled:
        return None
    route = ingress.public_route(spec, owner.name, wanted_route.path)
    parents = []
    for ref in wanted_route.parent_refs:
        # Group, kind and namespace always written: the API server's defaults would otherwise be what a
        # comparison finds, and a namespace taken out would stay.
        parent = {"group": GROUP, "kind": "Gateway", "namespace": ref.namespace or owner.namespace}
        parent["name"] = ref.name
        if ref.section_name:
            parent["sectionName"] = ref.section_name
        parents.append(parent)
    backend = {"group": "", "kind": "Service", "name": route.service, "port": route.port, "weight": 1}
    rule = {
        "matches": [{"path": {"type": "PathPrefix", "value": route.path}}],
        "backendRefs": [backend],
    }
    metadata: dict[str, Any] = {
        "name": names.http_route(owner.name),
        "namespace": owner.namespace,
        "labels": names.component_labels(owner.name, names.COMPONENT_HTTP),
        "ownerReferences": [owner.reference()],
    }
    if wanted_route.annotations:
        metadata["annotations"] = dict(sorted(wanted_route.annotations.items()))
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": metadata,
        "spec": {"parentRefs": parents, "hostnames": hostnames(spec), "rules": [rule]},
    }


def refusal(
    spec: KeycloakSpec, policy: ingress_policy.IngressPolicy, namespace: str
) -> ingress_policy.Refusal | None:
    """The first thing in `spec.httpRoute` the installation does not allow; None when it allows all of it
    (or there is to be no route). The hosts are judged by the Ingress's host allow-list."""
    if not wanted(spec):
        return None
    if not hostnames(spec):
        return ingress_policy.Refusal(
            "spec.httpRoute.hostnames", "no host", (), why=NO_HOST_MESSAGE.split(": ", 1)[1], what=KIND
        )
    assert spec.http_route is not None
    # An unset namespace is the Keycloak's: a Gateway may be named twice only once that is filled in.
    refs = spec.http_route.parent_refs
    twice = repeated_parent([(r.namespace or namespace, r.name, r.section_name) for r in refs])
    if twice:
        return ingress_policy.Refusal("spec.httpRoute.parentRefs", "", (), why=twice, what=KIND)
    for gateway in gateways(spec, namespace):
        if policy.gateways and gateway not in policy.gateways:
            return ingress_policy.Refusal(
                "spec.httpRoute.parentRefs", f"Gateway {gateway}", policy.gateways, what=KIND
            )
    # Gateway controllers read a route's annotations as Ingress controllers read an Ingress's: where the
    # installation restricts anything, they pass the annotation-key allow-list (none when it is empty), as
    # the public Service's do (core/service_policy).
    if service_policy.restricted(policy):
        keys = policy.annotation_keys
        for key in sorted(spec.http_route.annotations or {}):
            if not keys or not ingress_policy.annotation_allowed(key, keys):
                why = (
                    None
                    if keys
                    else f"key {key!r} is not allowed: this installation allows no annotation keys"
                )
                return ingress_policy.Refusal(
                    "spec.httpRoute.annotations", f"key {key!r}", keys, why=why, what=KIND
                )
    # Without spec.httpRoute.hostnames the route takes the host of spec.hostname: the field to name.
    field = "spec.httpRoute.hostnames" if spec.http_route.hostnames else "spec.hostname.hostname"
    for host in hostnames(spec):
        if not ingress_policy.host_allowed(host, policy.host_suffixes):
            return ingress_policy.Refusal(field, f"host {host!r}", policy.host_suffixes, what=KIND)
    return None


def problem(
    spec: KeycloakSpec, policy: ingress_policy.IngressPolicy, namespace: str, *, served: bool
) -> conditions.Wanted | None:
    """Why the route this spec asks for is not written (Degraded), or None."""
    if wanted(spec) and not served:
        return conditions.Wanted(
            conditions.DEGRADED,
            "True",
            UNAVAILABLE,
            f"spec.httpRoute: the cluster does not serve {KIND}s ({GROUP}/{VERSION}: the Gateway API's "
            "CRDs); none is made until it does. The rest of the Keycloak runs",
        )
    refused = refusal(spec, policy, namespace)
    if refused is not None:
        return conditions.Wanted(conditions.DEGRADED, "True", REASON, refused.message)
    return None
