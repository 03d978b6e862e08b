"""Which server a realm resource names, spelled one way, and whether the operator may talk to it at all.

A replication round is keyed by its server's URL (ADR 0008), so two spellings of one server (`HTTPS://SSO`,
`https://sso:443/`) must give one key: otherwise two rounds would each see the other's realms as orphans.
Spellings normalisation cannot join (two DNS names of one host) are handled by the round itself, which never
deletes a realm that some resource still declares (`realm.plan_realms`).

`spec.server.external` lets a tenant make the operator send an admin login anywhere, and wait on whatever
answers; an installation can restrict it to an allow-list of hosts (`ServerPolicy.external_hosts`).
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from keycloak_operator.kernel import names

_DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST_ENTRY = re.compile(r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class ServerPolicy:
    """Installation-wide settings of where admin logins may go (parsed once, from the command line)."""

    cluster_domain: str = names.DEFAULT_CLUSTER_DOMAIN
    # Hosts `spec.server.external.url` may name: `sso.example.com`, or `*.example.com` for any host under
    # it. Empty: any host (the default; the install guide says when to set it).
    external_hosts: tuple[str, ...] = ()
    # KCOP_IDP_ALLOW_LOOPBACK_HTTP: whether a URL Keycloak calls (an identity provider's, a client's
    # back-channel logout URL: called_urls.py) may name a loopback host (Keycloak's own pod: its management
    # port, its sidecars). Off: for tests with an upstream on the node. Named for the providers it was first.
    idp_loopback_http: bool = False

    def __post_init__(self) -> None:
        for entry in self.external_hosts:
            if not _HOST_ENTRY.fullmatch(entry):
                raise ValueError(f"not a host name or *.domain: {entry!r}")
        if not names.is_dns_subdomain(self.cluster_domain):
            raise ValueError(f"not a DNS domain: {self.cluster_domain!r}")


DEFAULT_POLICY = ServerPolicy()


def normalize_url(url: str) -> str | None:
    """One spelling per server: scheme and host lower-case, the default port and trailing '/' dropped.
    None for anything that is not a plain http(s) URL (credentials, query, fragment, no host)."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if scheme not in _DEFAULT_PORTS or not host or "@" in parts.netloc or parts.query or parts.fragment:
        return None
    if any(c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in url):
        return None  # httpx would refuse it later, as an unreachable server rather than an invalid spec
    shown = f"[{host}]" if ":" in host else host
    netloc = shown if port is None or port == _DEFAULT_PORTS[scheme] else f"{shown}:{port}"
    return urllib.parse.urlunsplit((scheme, netloc, parts.path.rstrip("/"), "", ""))


def host_of(url: str) -> str:
    """The host a normalised URL names, without a trailing dot (`sso.example.com.` is `sso.example.com`)."""
    return (urllib.parse.urlsplit(url).hostname or "").rstrip(".")


def host_allowed(url: str, policy: ServerPolicy) -> bool:
    if not policy.external_hosts:
        return True
    host = host_of(url)
    for entry in policy.external_hosts:
        if entry.startswith("*."):
            if host.endswith(entry[1:]) and len(host) > len(entry) - 1:
                return True
        elif host == entry:
            return True
    return False


def backoff_key(url: str) -> str:
    """What a slow server's retry delay applies to: its host and port, whatever the path."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
