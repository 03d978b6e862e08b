"""The way in through the Gateway API: `spec.httpRoute`, one HTTPRoute beside (or instead of) the Ingress.

It attaches to Gateways the installation allows and routes, as the Ingress does, one path prefix to the
public Service `<name>-service`, whose name never changes (a blue-green cutover changes only its selector),
so an upgrade never touches the route either.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.ingress import (
    ANNOTATIONS_MAX,
    HOST_NOT_IP_RULE,
    HOSTS_MAX,
    AnnotationValue,
    IngressHost,
    check_hosts,
    routed_path,
)
from keycloak_operator.models.scheduling import check_label_keys

# A Gateway listener's name (the Gateway API's SectionName: a DNS-1123 subdomain).
SECTION_NAME = pt.DNS1123_SUBDOMAIN
# The Gateway API allows 32; a Keycloak is reached through a handful of Gateways at most.
PARENT_REFS_MAX = 8
# The Gateway API's cap on a path match (an Ingress path may be longer).
PATH_MAX = 1024


class GatewayRef(CrdModel):
    """A Gateway the route attaches to (a Gateway API parentRef of kind Gateway)."""

    name: str = pt.object_name("The Gateway's name.")
    namespace: str | None = pt.namespace_name(
        "The Gateway's namespace. Unset: the Keycloak's. A Gateway in another namespace accepts the route "
        "only if its listener's allowedRoutes lets this namespace in.",
        default=None,
    )
    section_name: str | None = Field(
        default=None,
        min_length=1,
        max_length=pt.SUBDOMAIN_MAX,
        pattern=SECTION_NAME,
        description="One listener of the Gateway, by name. Unset: every listener that accepts the route.",
    )


class HttpRouteSpec(CrdModel):
    """One `gateway.networking.k8s.io/v1` HTTPRoute `<name>-keycloak` whose backend is the public Service,
    made only where the cluster serves that API. Not part of the version: a change never rolls the pods,
    and a rollback keeps today's route."""

    enabled: bool = Field(
        default=True, description="Make the HTTPRoute (false: delete it, if this Keycloak made it)."
    )
    parent_refs: list[GatewayRef] = Field(
        min_length=1,
        max_length=PARENT_REFS_MAX,
        description="The Gateways (and optionally their listeners) the route attaches to. The installation "
        "may allow only some Gateways (the operator's --gateway flag).",
    )
    hostnames: list[IngressHost] | None = Field(
        default=None,
        max_length=HOSTS_MAX,
        description="Host names routed to Keycloak. Unset: the host of spec.hostname.hostname; one of the "
        "two is required (a route without a host would take every host of the Gateway's listeners).",
    )
    path: str = routed_path(PATH_MAX)
    annotations: dict[str, AnnotationValue] | None = Field(
        default=None,
        max_length=ANNOTATIONS_MAX,
        description="Annotations on the HTTPRoute, passed as written (for the Gateway's controller).",
    )

    @field_validator("annotations")
    @classmethod
    def _annotation_keys(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return check_label_keys(value, "an annotation")

    @field_validator("hostnames")
    @classmethod
    def _hostnames(cls, value: list[str] | None) -> list[str] | None:
        return check_hosts(value)

    @field_validator("parent_refs")
    @classmethod
    def _distinct_parents(cls, value: list[GatewayRef]) -> list[GatewayRef]:
        problem = repeated_parent([(r.namespace or "", r.name, r.section_name) for r in value])
        if problem:
            raise ValueError(problem)
        return value


def repeated_parent(parents: list[tuple[str, str, str | None]]) -> str | None:
    """What the Gateway API refuses in a route's parents (namespace, name, sectionName): one Gateway named
    twice unless every mention of it names a different listener."""
    seen = [(namespace, name) for namespace, name, _ in parents]
    for namespace, name, section in parents:
        if seen.count((namespace, name)) > 1 and not section:
            return f"Gateway {name!r} is listed more than once: each mention needs its own sectionName"
    if len(set(parents)) != len(parents):
        return "each Gateway listener may be listed once"
    return None


# A route without a host matches every request its Gateway's listeners receive (ADR 0012), as an Ingress
# rule without one does.
NO_HOST_MESSAGE = (
    "spec.httpRoute.hostnames: an HTTPRoute needs a host; list spec.httpRoute.hostnames, or set "
    "spec.hostname.hostname to a host name (not an IP address). Without one it would take every host of "
    "the Gateway here"
)
NO_HOST_RULE = {
    "rule": "!has(self.httpRoute) || (has(self.httpRoute.enabled) && !self.httpRoute.enabled) "
    "|| (has(self.httpRoute.hostnames) && size(self.httpRoute.hostnames) > 0) || has(self.hostname)",
    "message": NO_HOST_MESSAGE,
    "fieldPath": ".httpRoute.hostnames",
}
HOSTNAME_NOT_IP_RULE = {**HOST_NOT_IP_RULE, "message": "an HTTPRoute routes by host name, not by IP address"}
