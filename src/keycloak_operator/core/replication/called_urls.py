"""The URLs a team sets that Keycloak itself calls, from its own pod: an identity provider's endpoints (token,
userinfo, JWKS, a SAML provider's services), a client's back-channel logout URL and a SAML client's
POST-binding logout service URL (where Keycloak sends its back-channel logout). One rule for all of them.

Keycloak makes those requests on the word of whichever namespace the realm lets declare them, so such a URL
must not name:

- Keycloak's own pod: a loopback host (`localhost`, 127.0.0.0/8, ::1, 0.0.0.0, and the other spellings a
  resolver takes for them, such as `127.1` or `2130706433`), which reaches its management port and its
  sidecars. Allowed only when the operator runs with KCOP_IDP_ALLOW_LOOPBACK_HTTP, for tests whose upstream
  servers listen on the node's loopback.
- a link-local address (169.254.0.0/16, fe80::/10) or a cloud's metadata service, by address or name: the
  node's credentials are served there. Never allowed.

Nothing is resolved here: a name that resolves to such an address is not caught; NetworkPolicies on
Keycloak's egress are the defence for that (docs/guide/realms-and-clients.md).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from typing import Final
from urllib.parse import urlsplit

from keycloak_operator.core.replication.sync import Verdict
from keycloak_operator.models.client import KeycloakClientSpec

REASON: Final = "InsecureUrl"
# Metadata services not on a link-local address, and the names clouds give them.
METADATA_ADDRESSES: Final = frozenset(
    ipaddress.ip_address(a)
    for a in ("fd00:ec2::254", "100.100.100.200")  # AWS (IPv6), Alibaba Cloud
)
METADATA_NAMES: Final = frozenset(
    {"metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal"}
)

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# One to four numbers, decimal, octal or hex, dot-separated: the IPv4 forms a resolver takes.
_NUMERIC_V4 = re.compile(r"(0[xX][0-9a-fA-F]+|[0-9]+)(\.(0[xX][0-9a-fA-F]+|[0-9]+)){0,3}")


def _address(host: str) -> Address | None:
    """The address a host is written as, if it is one: also the shorter and numeric IPv4 forms a resolver
    takes (`127.1`, `0x7f.0.0.1`, `2130706433`), and an IPv4 address mapped into IPv6, as the IPv4 one."""
    try:
        address: Address = ipaddress.ip_address(host)
    except ValueError:
        if not _NUMERIC_V4.fullmatch(host):  # inet_aton takes trailing junk too: only numbers are asked
            return None
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def host_refusal(url: str, loopback_allowed: bool) -> str | None:
    """Why Keycloak must not be sent to `url`, or None. `loopback_allowed`: KCOP_IDP_ALLOW_LOOPBACK_HTTP."""
    try:
        host = urlsplit(url).hostname
    except ValueError:  # an unbalanced bracket, say: Keycloak could not call it either
        return "its host cannot be read"
    if not host:
        return "it names no host"
    host = host.rstrip(".")  # `localhost.` is localhost
    address = _address(host)
    if host in METADATA_NAMES or address in METADATA_ADDRESSES:
        return "it names a cloud metadata service, which serves the node's credentials"
    if address is not None and address.is_link_local:
        return "it names a link-local address, where a cloud's metadata service serves the node's credentials"
    local = host == "localhost" or host.endswith(".localhost")
    if not loopback_allowed and (
        local or (address is not None and (address.is_loopback or address.is_unspecified))
    ):
        return "it names a loopback host: Keycloak would call its own pod (its management port, its sidecars)"
    return None


def url_problem(urls: Iterable[tuple[str, str | None]], loopback_allowed: bool) -> Verdict | None:
    """The refusal of the first URL (by its field's path under spec, e.g. `logout.backChannelUrl`) that
    Keycloak must not be sent to; None when every one is fine (an absent one, None or "", is)."""
    for path, url in urls:
        if not url:
            continue
        why = host_refusal(url, loopback_allowed)
        if why is not None:
            message = f"spec.{path}: {why}; nothing was written"
            return Verdict("Error", REASON, message, revocable=False)
    return None


def client_urls(spec: KeycloakClientSpec) -> list[tuple[str, str | None]]:
    """The URLs of a client Keycloak calls, by their path under spec: the OIDC back-channel logout URL, and
    a SAML client's POST-binding logout service URL (Keycloak posts its back-channel logout there). Its
    redirect and assertion consumer URLs are the browser's to follow, not Keycloak's to call."""
    logout = spec.logout.back_channel_url if spec.logout is not None else None
    slo = spec.saml.single_logout_service_url_post if spec.saml is not None else None
    return [("logout.backChannelUrl", logout), ("saml.singleLogoutServiceUrlPost", slo)]
