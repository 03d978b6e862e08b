"""What an installation lets a Keycloak's `spec.ingress` ask an ingress controller for.

An Ingress is read by a controller the whole cluster shares: its class picks the controller, its annotations
configure it (some controllers run snippets from them), and its hosts take traffic away from whoever else
serves them. A tenant who may create Keycloaks may otherwise write all three (ADR 0012). Each allow-list is
set by the installation (the operator's command line); empty, it does not restrict, as before it existed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from keycloak_operator.core import ingress
from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.ingress import NO_HOST_MESSAGE
from keycloak_operator.models.keycloak import KeycloakSpec

REASON = "IngressNotAllowed"
# A host suffix entry: `.example.com` (any host under example.com) or an exact host `sso.example.com`.
_HOST_ENTRY = re.compile(rf"^\.?{pt.LABEL}(\.{pt.LABEL})*$")
_PREFIX_WILDCARD = "/*"


@dataclass(frozen=True)
class IngressPolicy:
    """Installation-wide allow-lists for `spec.ingress` (parsed once, from the command line)."""

    # IngressClass names spec.ingress.className may name. Set, an unset className (the cluster's default
    # class, which the operator cannot see) is refused too.
    classes: tuple[str, ...] = ()
    # Annotation keys: exact (`nginx.ingress.kubernetes.io/proxy-buffer-size`) or every key with a prefix
    # (`nginx.ingress.kubernetes.io/*`).
    annotation_keys: tuple[str, ...] = ()
    # Hosts: `.example.com` for any host under example.com (not example.com itself), or an exact host. They
    # hold for the hosts of spec.httpRoute too: a Gateway's hosts are the same shared traffic.
    host_suffixes: tuple[str, ...] = ()
    # Gateways (`namespace/name`) spec.httpRoute.parentRefs may attach to (core/http_route.py).
    gateways: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for c in self.classes:
            if not names.is_dns_subdomain(c):
                raise ValueError(f"not an IngressClass name: {c!r}")
        for key in self.annotation_keys:
            if not _annotation_entry_valid(key):
                raise ValueError(f"not an annotation key or prefix/*: {key!r}")
        for entry in self.host_suffixes:
            if not _HOST_ENTRY.fullmatch(normalize_host(entry)):
                raise ValueError(f"not a host name or .domain: {entry!r}")
        for gateway in self.gateways:
            if not _gateway_entry_valid(gateway):
                raise ValueError(f"not a Gateway as namespace/name: {gateway!r}")


DEFAULT_POLICY = IngressPolicy()


@dataclass(frozen=True)
class Refusal:
    field: str  # the spec field, as the user writes it: spec.ingress.className
    value: str
    allowed: tuple[str, ...]
    why: str | None = None  # a refusal that is no allow-list's: said instead
    what: str = "Ingress"  # the kind held back: Ingress, or HTTPRoute (core/http_route.py)

    @property
    def message(self) -> str:
        what = self.why or (
            f"{self.value} is not allowed by this installation (allowed: {', '.join(self.allowed)})"
        )
        return (
            f"{self.field}: {what}; no {self.what} is created or changed (one this Keycloak made before is "
            "left as it was) until the spec or the installation's allow-list changes"
        )


def normalize_host(host: str) -> str:
    """One spelling per host: DNS names are case-insensitive, and a final '.' names the same host."""
    return host.strip().lower().rstrip(".")


def host_allowed(host: str, suffixes: tuple[str, ...]) -> bool:
    """`host` (possibly `*.x`) is one of the exact hosts, or lies under a `.domain` entry; label by label,
    so `evil-example.com` is not under `.example.com`."""
    if not suffixes:
        return True
    wanted = normalize_host(host)
    for entry in map(normalize_host, suffixes):
        if entry.startswith("."):
            if wanted.endswith(entry) and len(wanted) > len(entry):
                return True
        elif wanted == entry:
            return True
    return False


def annotation_allowed(key: str, entries: tuple[str, ...]) -> bool:
    if not entries:
        return True
    for entry in entries:
        if entry.endswith(_PREFIX_WILDCARD):
            if key.startswith(entry[:-1]):  # the prefix with its '/'
                return True
        elif key == entry:
            return True
    return False


def class_allowed(class_name: str | None, classes: tuple[str, ...]) -> bool:
    return not classes or class_name in classes


def refusal(spec: KeycloakSpec, policy: IngressPolicy) -> Refusal | None:
    """The first thing in `spec.ingress` the installation does not allow; None when it allows all of it (or
    there is to be no Ingress)."""
    wanted = spec.ingress
    if wanted is None or not wanted.enabled:
        return None
    if not ingress.hosts(spec):
        # Refused here, not by the model: a Keycloak stored before the CRD's rule keeps reconciling and only
        # its Ingress waits (the API server refuses such a spec on every new write).
        return Refusal("spec.ingress.hosts", "no host", (), why=NO_HOST_MESSAGE.split(": ", 1)[1])
    if not class_allowed(wanted.class_name, policy.classes):
        shown = repr(wanted.class_name) if wanted.class_name else "unset (the cluster's default class)"
        return Refusal("spec.ingress.className", shown, policy.classes)
    for key in sorted(wanted.annotations or {}):
        if not annotation_allowed(key, policy.annotation_keys):
            return Refusal("spec.ingress.annotations", f"key {key!r}", policy.annotation_keys)
    # Without spec.ingress.hosts the Ingress routes the host of spec.hostname: that field is the one to name.
    field = "spec.ingress.hosts" if wanted.hosts else "spec.hostname.hostname"
    for host in ingress.hosts(spec):
        if not host_allowed(host, policy.host_suffixes):
            return Refusal(field, f"host {host!r}", policy.host_suffixes)
    return None


def _annotation_entry_valid(entry: str) -> bool:
    if entry.endswith(_PREFIX_WILDCARD):
        return names.is_dns_subdomain(entry[: -len(_PREFIX_WILDCARD)])
    return len(entry) <= pt.LABEL_KEY_MAX and bool(re.fullmatch(pt.LABEL_KEY, entry))


_GATEWAY_ENTRY = re.compile(rf"^{pt.LABEL}/{pt.LABEL}(\.{pt.LABEL})*$")


def _gateway_entry_valid(entry: str) -> bool:
    """namespace/name: a namespace (DNS-1123 label) and a Gateway's name (DNS-1123 subdomain)."""
    namespace, _, name = entry.partition("/")
    return bool(_GATEWAY_ENTRY.fullmatch(entry)) and len(namespace) <= pt.LABEL_MAX and len(name) <= 253
