"""How Keycloak names itself and whom it believes about the request: `spec.hostname` and `spec.proxy`
(Keycloak's hostname v2 and proxy options, checked against `kc.sh start --help` of the 26.7.3 server)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from keycloak_operator.models import patterns as pt
from keycloak_operator.models.base import CrdModel

# A host name, or an http(s) URL with an optional path (Keycloak takes either for `hostname`).
HOST_OR_URL = rf"^(?:{pt.HOST[1:-1]}|{pt.HTTP_URL[1:-1]})$"
# An IPv4/IPv6 address or CIDR block, as `proxy-trusted-addresses` takes them.
ADDRESS = r"^(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}(?:/[0-9]{1,2})?|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*(?:/[0-9]{1,3})?)$"
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
    def _dynamic_needs_a_url(self) -> HostnameSpec:
        if self.backchannel_dynamic and not self.hostname.startswith(("http://", "https://")):
            raise ValueError("hostname.backchannelDynamic needs hostname.hostname to be a full URL")
        return self


BACKCHANNEL_RULE = {
    "rule": "!has(self.backchannelDynamic) || !self.backchannelDynamic || self.hostname.startsWith('http')",
    "message": "backchannelDynamic needs hostname to be a full URL (https://...)",
}


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
