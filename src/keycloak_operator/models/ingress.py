"""The way in from outside the cluster: `spec.ingress`, one Ingress in front of the public Service.

The backend is the public Service `<name>-service`, whose name never changes (a blue-green cutover changes
only its selector), so an upgrade never touches the Ingress.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from typing import Annotated, Any

from pydantic import Field, field_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.scheduling import check_label_keys

# An Ingress rule's host: a lower-case DNS name, optionally a wildcard for one label (`*.example.com`).
# Kubernetes refuses IP addresses and upper case there.
INGRESS_HOST = rf"^(\*\.)?{pt.LABEL}(\.{pt.LABEL})*$"
# A Prefix path: '/' then URL path characters, no query, fragment, space or quote (ingress controllers
# refuse those, some write the path into their configuration verbatim), and segments as the API server
# wants them in an Ingress: none empty ('//'), '.' or '..' (it refuses '//', '/./', '/../' and a final '/.'
# or '/..'); one final '/' may end it.
_PATH_SEGMENT = r"([A-Za-z0-9_~-][A-Za-z0-9._~-]*|\.[A-Za-z0-9_~-][A-Za-z0-9._~-]*|\.\.[A-Za-z0-9._~-]+)"
INGRESS_PATH = rf"^/({_PATH_SEGMENT}(/{_PATH_SEGMENT})*/?)?$"
# What the host pattern admits but Kubernetes refuses: an IPv4 address.
IPV4 = r"^[0-9]+(\.[0-9]+){3}$"
HOSTS_MAX = 16
# With values of up to 4 KiB and keys of up to 317 characters, 32 stay well inside the 256 KiB the API server
# allows for an object's annotations together.
ANNOTATIONS_MAX = 32
ANNOTATION_VALUE_MAX = 4096

IngressHost = Annotated[str, Field(min_length=1, max_length=pt.SUBDOMAIN_MAX, pattern=INGRESS_HOST)]
AnnotationValue = Annotated[str, Field(max_length=ANNOTATION_VALUE_MAX)]


def routed_path(max_length: int = pt.URL_MAX) -> Any:
    """The path prefix routed to Keycloak: one field definition for the Ingress and the HTTPRoute, so both
    accept the same paths (the rule that renders them is core/ingress.public_route), up to `max_length`."""
    return Field(
        default="/",
        min_length=1,
        max_length=max_length,
        pattern=INGRESS_PATH,
        description="Path prefix routed to Keycloak.",
    )


class IngressTls(CrdModel):
    """TLS at the ingress controller."""

    secret_name: str | None = pt.object_name(
        "A `kubernetes.io/tls` Secret in the Keycloak's namespace for the hosts (cert-manager can make it). "
        "Unset: the ingress controller's default certificate.",
        default=None,
    )


class IngressSpec(CrdModel):
    """One `networking.k8s.io/v1` Ingress `<name>-keycloak` whose backend is the public Service. Not part
    of the version: a change never rolls the pods, and a rollback keeps today's Ingress."""

    enabled: bool = Field(
        default=True, description="Make the Ingress (false: delete it, if this Keycloak made it)."
    )
    class_name: str | None = pt.object_name(
        "IngressClass that serves it (ingressClassName). Unset: the cluster's default class.", default=None
    )
    annotations: dict[str, AnnotationValue] | None = Field(
        default=None,
        max_length=ANNOTATIONS_MAX,
        description="Annotations for the ingress controller, passed as written (the controller decides "
        "which it honours). With spec.tls the operator adds `nginx.ingress.kubernetes.io/backend-protocol: "
        "HTTPS`; an annotation here wins over it.",
    )
    hosts: list[IngressHost] | None = Field(
        default=None,
        max_length=HOSTS_MAX,
        description="Host names routed to Keycloak. Unset: the host of spec.hostname.hostname; one of the "
        "two is required (a rule without a host would route every host of the ingress controller here).",
    )
    path: str = routed_path()
    tls: IngressTls | None = Field(
        default=None, description="Terminate TLS at the ingress controller for the hosts. Unset: no TLS."
    )

    @field_validator("annotations")
    @classmethod
    def _annotation_keys(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return check_label_keys(value, "an annotation")

    @field_validator("hosts")
    @classmethod
    def _distinct_names(cls, value: list[str] | None) -> list[str] | None:
        return check_hosts(value)


def check_hosts(value: list[str] | None) -> list[str] | None:
    """Hosts routed by an Ingress or an HTTPRoute: each once, none an IP address (both APIs refuse those)."""
    if value is not None and len(set(value)) != len(value):
        raise ValueError("each host may be listed once")
    for host in value or []:
        if re.fullmatch(IPV4, host):
            raise ValueError(f"{host!r}: a route is by host name, not by IP address")
    return value


def routable_host(hostname: str) -> str | None:
    """The host an Ingress rule can route by in `spec.hostname.hostname` (a host name or a URL), lower-cased;
    None when it names none (an IP address: Kubernetes refuses those in a rule)."""
    host = urllib.parse.urlsplit(hostname).hostname if "://" in hostname else hostname
    host = (host or "").lower()
    if not host or _is_ip(host) or not re.fullmatch(INGRESS_HOST, host):
        return None
    return host


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


# A rule without a host matches every request the ingress controller receives, for any name: on a shared
# controller one tenant's Keycloak would take the traffic of every host nobody else claimed (ADR 0012).
NO_HOST_MESSAGE = (
    "spec.ingress.hosts: an Ingress needs a host; list spec.ingress.hosts, or set spec.hostname.hostname to "
    "a host name (not an IP address). Without one it would route every host of the ingress controller here"
)
# On the CRD's spec: the same as KeycloakSpec._ingress_has_a_host as far as CEL can tell cheaply (a
# spec.hostname that is an IP address is left to the model, which reports it as Degraded: InvalidSpec).
NO_HOST_RULE = {
    "rule": "!has(self.ingress) || (has(self.ingress.enabled) && !self.ingress.enabled) "
    "|| (has(self.ingress.hosts) && size(self.ingress.hosts) > 0) || has(self.hostname)",
    "message": NO_HOST_MESSAGE,
    "fieldPath": ".ingress.hosts",
}

HOST_NOT_IP_RULE = {
    "rule": f"!self.matches(r'{IPV4}')",
    "message": "an Ingress routes by host name, not by IP address",
}
