"""How Keycloak names itself, whom it believes about the request and how it serves HTTPS: `spec.hostname`
and `spec.proxy` (Keycloak's hostname v2 and proxy options, checked against `kc.sh start --help` of the
26.7.3 server), and `spec.tls`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel

# A host name, or an http(s) URL with an optional path (Keycloak takes either for `hostname`).
HOST_OR_URL = rf"^(?:{pt.HOST[1:-1]}|{pt.HTTP_URL[1:-1]})$"
# An IPv4 address or CIDR block (octets 0-255, prefix 0-32), or an IPv6 one, as `proxy-trusted-addresses`
# takes them: Keycloak refuses anything else at start, so the CRD refuses it first.
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}(?:/(?:3[0-2]|[12]?[0-9]))?"
_IPV6 = r"[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*(?:/(?:12[0-8]|1[01][0-9]|[1-9]?[0-9]))?"
ADDRESS = rf"^(?:{_IPV4}|{_IPV6})$"
# A CIDR block, prefix required (a NetworkPolicy's ipBlock).
_CIDR4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}/(?:3[0-2]|[12]?[0-9])"
_CIDR6 = r"[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*/(?:12[0-8]|1[01][0-9]|[1-9]?[0-9])"
CIDR = rf"^(?:{_CIDR4}|{_CIDR6})$"
TRUSTED_MAX = 64

Address = Annotated[str, Field(min_length=2, max_length=49, pattern=ADDRESS)]


class HostnameSpec(CrdModel):
    """The address users reach Keycloak at: it is the issuer of every token and the base of every link."""

    hostname: str = Field(
        min_length=1,
        max_length=pt.URL_MAX,
        pattern=HOST_OR_URL,
        description="Public address: a full URL (https://sso.example.com, fixes scheme, port and path) or a "
        "host name (scheme and port then follow the request).",
    )
    admin: str | None = Field(
        default=None,
        max_length=pt.URL_MAX,
        pattern=pt.HTTP_URL,
        description="URL of the admin console when it is exposed at another address.",
    )
    strict: bool = Field(
        default=True,
        description="Never take the host name from the request (Keycloak's hostname-strict). Turn off only "
        "behind a proxy that overwrites the Host header.",
    )
    backchannel_dynamic: bool = Field(
        default=False,
        description="Back-channel URLs (token, userinfo) follow the request, for applications that reach "
        "Keycloak on an internal address. Needs hostname to be a full URL.",
    )

    @model_validator(mode="after")
    def _url_when_needed(self) -> HostnameSpec:
        """Keycloak refuses to start with either on a bare host name; the CRD rules say the same."""
        if not self.hostname.startswith(("http://", "https://")):
            if self.backchannel_dynamic:
                raise ValueError("hostname.backchannelDynamic needs hostname.hostname to be a full URL")
            if self.admin:
                raise ValueError("hostname.admin needs hostname.hostname to be a full URL")
        return self


_IS_URL = "(self.hostname.startsWith('http://') || self.hostname.startsWith('https://'))"
HOSTNAME_RULES = [
    {
        "rule": f"!has(self.backchannelDynamic) || !self.backchannelDynamic || {_IS_URL}",
        "message": "backchannelDynamic needs hostname to be a full URL (https://...)",
    },
    {
        "rule": f"!has(self.admin) || {_IS_URL}",
        "message": "admin needs hostname to be a full URL (https://...)",
    },
]


class ProxySpec(CrdModel):
    """The reverse proxy in front of Keycloak (an ingress controller): which forwarding headers to believe."""

    headers: Literal["forwarded", "xforwarded"] = Field(
        description="forwarded (RFC 7239 Forwarded) or xforwarded (X-Forwarded-*). Keycloak then takes the "
        "client address, scheme and host from them, so the proxy must overwrite them.",
    )
    trusted_addresses: list[Address] = Field(
        default_factory=list,
        max_length=TRUSTED_MAX,
        description="Addresses or CIDR blocks of the proxies whose headers are believed; empty believes "
        "every peer, which lets any pod that reaches Keycloak directly forge them.",
    )


class TlsSpec(CrdModel):
    """HTTPS served by Keycloak itself, from a Secret."""

    secret: str = pt.object_name(
        "A `kubernetes.io/tls` Secret in the Keycloak's namespace (`tls.crt`, `tls.key`, and `ca.crt` when a "
        "private CA signed it). Keycloak serves HTTPS on 8443 with it, and the operator's own admin login "
        "goes over HTTPS with the certificate checked: against `ca.crt` when present, else the system's CAs. "
        "The certificate must name `<name>-service.<namespace>.svc.<cluster domain>`."
    )
    http_enabled: bool = Field(
        default=False,
        description="Keep plain HTTP on 8080 as well (off: with TLS on, HTTP is off unless this is set).",
    )
