"""The Keycloak's Ingress: a pure rendering of `spec.ingress`.

Its backend is the public Service by name and port name, both of which a blue-green upgrade leaves alone (a
cutover moves only the Service's selector), and nothing in it depends on the image or the track: an upgrade
and a rollback render the same Ingress, so they never write it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from keycloak_operator.core import children
from keycloak_operator.kernel import names
from keycloak_operator.models.ingress import routable_host
from keycloak_operator.models.keycloak import KeycloakSpec

# What the ingress-nginx controller needs to speak HTTPS to a backend; other controllers ignore it.
BACKEND_PROTOCOL_ANNOTATION = "nginx.ingress.kubernetes.io/backend-protocol"


def hosts(spec: KeycloakSpec) -> list[str]:
    """The hosts routed: the spec's, else the host of spec.hostname (when an Ingress can route by it: not an
    IP address), else none (a spec the model refuses when it asks for an Ingress)."""
    if spec.ingress is not None and spec.ingress.hosts:
        return list(spec.ingress.hosts)
    host = routable_host(spec.hostname.hostname) if spec.hostname is not None else None
    return [host] if host else []


def backend_port(spec: KeycloakSpec) -> str:
    """The public Service's port the Ingress sends to: HTTPS whenever Keycloak serves it (end to end)."""
    return children.serving_ports(spec)[0][0]


@dataclass(frozen=True)
class PublicRoute:
    """What a way in from outside sends where: one path prefix to the public Service's serving port. The
    one rule for the Ingress and the HTTPRoute alike, so both expose exactly the same thing: never the
    management port (metrics, health), nothing but the prefix the spec names."""

    path: str
    service: str  # the public Service's name
    port_name: str  # http, or https whenever Keycloak serves it (end to end)
    port: int


def public_route(spec: KeycloakSpec, keycloak: str, path: str) -> PublicRoute:
    name, port = children.serving_ports(spec)[0]
    return PublicRoute(path=path, service=names.public_service(keycloak), port_name=name, port=port)


def ingress(spec: KeycloakSpec, owner: children.Owner) -> dict[str, Any] | None:
    """The Ingress `spec.ingress` asks for; None when there is to be none."""
    wanted_ingress = spec.ingress
    if wanted_ingress is None or not wanted_ingress.enabled:
        return None
    route = public_route(spec, owner.name, wanted_ingress.path)
    annotations = {BACKEND_PROTOCOL_ANNOTATION: "HTTPS"} if route.port_name == "https" else {}
    annotations.update(wanted_ingress.annotations or {})
    backend = {"service": {"name": route.service, "port": {"name": route.port_name}}}
    paths = [{"path": route.path, "pathType": "Prefix", "backend": backend}]
    routed = hosts(spec)
    rules: list[dict[str, Any]] = [{"host": h, "http": {"paths": paths}} for h in routed] or [
        {"http": {"paths": paths}}
    ]
    body: dict[str, Any] = {}
    if wanted_ingress.class_name:
        body["ingressClassName"] = wanted_ingress.class_name
    if wanted_ingress.tls is not None:
        tls: dict[str, Any] = {}
        if routed:
            tls["hosts"] = routed
        if wanted_ingress.tls.secret_name:
            tls["secretName"] = wanted_ingress.tls.secret_name
        body["tls"] = [tls]
    body["rules"] = rules
    metadata: dict[str, Any] = {
        "name": names.ingress(owner.name),
        "namespace": owner.namespace,
        "labels": names.component_labels(owner.name, names.COMPONENT_HTTP),
        "ownerReferences": [owner.reference()],
    }
    if annotations:
        metadata["annotations"] = dict(sorted(annotations.items()))
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": metadata, "spec": body}
