"""A KeycloakClient's optional settings: client roles, protocol mappers, default and optional client scopes,
PKCE, logout and a few token attributes.

As for a realm's settings blocks (realm_settings.py), an absent field is not managed: the client's content
(and so its hash) is then what it was before these fields existed, so upgrading the operator rewrites no
client, and what was set by hand in Keycloak stays. Inside a declared block every field defaults to what
Keycloak 26.7.3 gives a new client, so declaring the block manages all of it.

Typed fields rather than a free attribute map: Keycloak stores any client attribute it is sent, and an
attribute it does not know is silently ignored; a mistyped key would look applied and do nothing.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.service_account import RoleRefs, ServiceAccountRoles

# Seconds that Keycloak keeps in a Java int.
INT_MAX = 2**31 - 1
ROLES_MAX = 256
MAPPERS_MAX = 64
SCOPES_MAX = 64
# A mapper's config: Keycloak's keys are dotted ids (`claim.name`, `included.client.audience`).
CONFIG_MAX = 32
CONFIG_KEY = r"^[A-Za-z0-9][-A-Za-z0-9_.]*$"
CONFIG_KEY_MAX = 255
CONFIG_VALUE_MAX = 4096
CONFIG_VALUE = r"^[^\x00-\x1f\x7f]*$"
# A client scope's name as it travels in the `scope` parameter: printable ASCII, no space.
SCOPE_NAME_MAX = 255
# Keycloak joins post-logout redirect URIs with `##` into one attribute.
URI_SEPARATOR = "##"
# Printable ASCII in which every '#' is followed by another character: no `##` anywhere.
NO_DOUBLE_HASH = r"^([\x21\x22\x24-\x7e]|#[\x21\x22\x24-\x7e])+#?$"

# The OIDC mapper providers teams use, by their ids in Keycloak 26.7.3 (GET /admin/serverinfo,
# `protocolMapperTypes.openid-connect`). The server has more (script, pairwise, session notes, ...);
# those need a newer operator.
OidcMapperType = Literal[
    "oidc-usermodel-attribute-mapper",
    "oidc-usermodel-property-mapper",
    "oidc-hardcoded-claim-mapper",
    "oidc-hardcoded-role-mapper",
    "oidc-audience-mapper",
    "oidc-group-membership-mapper",
    "oidc-usermodel-realm-role-mapper",
    "oidc-usermodel-client-role-mapper",
    "oidc-full-name-mapper",
    "oidc-address-mapper",
    "oidc-role-name-mapper",
    "oidc-sub-mapper",
    "oidc-allowed-origins-mapper",
]
# A client's: the OIDC ones and SAML clients' (models/saml_client.py SAML_MAPPER_TYPES); the client's
# protocol decides which apply. A client scope takes OidcMapperType only (models/client_scope.py).
MapperType = Literal[
    OidcMapperType,
    "saml-user-attribute-mapper",
    "saml-user-property-mapper",
    "saml-role-list-mapper",
    "saml-hardcode-attribute-mapper",
]

_CONFIG_KEY_RE = re.compile(CONFIG_KEY)


def _config(value: dict[str, str]) -> dict[str, str]:
    for k, v in value.items():
        if len(k) > CONFIG_KEY_MAX or not _CONFIG_KEY_RE.match(k):
            raise ValueError(
                f"config key {k[:40]!r}: letters, digits, '.', '_', '-', at most {CONFIG_KEY_MAX}"
            )
        if len(v) > CONFIG_VALUE_MAX or any(ord(c) < 0x20 or ord(c) == 0x7F for c in v):
            raise ValueError(f"config value of {k!r}: no control characters, at most {CONFIG_VALUE_MAX}")
    return value


def _unique_names(items: list[ClientRole] | list[ProtocolMapper] | None, field: str) -> None:
    seen = [i.name for i in items or []]
    if len(seen) != len(set(seen)):
        raise ValueError(f"{field}: each name at most once")


# A value's bounds are in the schema itself (a CEL rule over every value costs more than the API server
# allows); a key's, which a schema cannot state, in a CEL rule.
ConfigValue = Annotated[str, Field(max_length=CONFIG_VALUE_MAX, pattern=CONFIG_VALUE)]
MapperConfig = Annotated[dict[str, ConfigValue], AfterValidator(_config)]
ScopeName = Annotated[str, Field(min_length=1, max_length=SCOPE_NAME_MAX, pattern=pt.NO_SPACE)]
LogoutUri = Annotated[str, Field(min_length=1, max_length=pt.URL_MAX, pattern=NO_DOUBLE_HASH)]

# The same rules for the API server, which cannot read the model's validator.
CONFIG_RULE = {
    "rule": f"self.all(k, size(k) <= {CONFIG_KEY_MAX} && k.matches('{CONFIG_KEY}'))",
    "message": "config keys: letters, digits, '.', '_', '-'",
}
SCOPES_DISJOINT_RULE = {
    "rule": "!has(self.defaultClientScopes) || !has(self.optionalClientScopes) || "
    "self.defaultClientScopes.all(s, !(s in self.optionalClientScopes))",
    "message": "a client scope is either default or optional, not both",
}


class ClientRole(CrdModel):
    name: str = Field(min_length=1, max_length=255, pattern=pt.NO_CONTROL, description="Role name.")
    description: str = Field(default="", max_length=2048, pattern=r"^[^\x00-\x08\x0b-\x1f\x7f]*$",
                             description="Role description.")  # fmt: skip
    composites: RoleRefs | None = Field(
        default=None,
        description="Roles this role includes (making it composite): exactly these; absent: not managed. "
        "Roles of realm-management or of another namespace's client need a grant in the realm's "
        "spec.serviceAccountGrants, as service-account roles do.",
    )


class ProtocolMapper(CrdModel):
    """One protocol mapper, identified by its name within the client; its type is of the client's protocol."""

    name: str = Field(min_length=1, max_length=255, pattern=pt.NO_CONTROL, description="Mapper name.")
    protocol_mapper: MapperType = Field(description="Mapper type (Keycloak's provider id).")
    config: MapperConfig = Field(
        default_factory=dict,
        max_length=CONFIG_MAX,
        json_schema_extra={"maxProperties": CONFIG_MAX},
        description="The mapper's settings as Keycloak names them, every value a string: e.g. "
        '`claim.name`, `claim.value`, `jsonType.label`, `access.token.claim: "true"`, '
        "`included.client.audience`; for SAML `attribute.name`, `attribute.nameformat`, `user.attribute`, "
        "`friendly.name`, `attribute.value`, `single`.",
    )


class ClientLogout(CrdModel):
    """Front- and back-channel logout; every field defaults to what Keycloak gives a new client."""

    front_channel: bool = Field(
        default=False,
        description="Front-channel logout (frontchannelLogout; off for a client made through the admin API).",
    )
    back_channel_url: str | None = Field(
        default=None,
        max_length=pt.URL_MAX,
        pattern=pt.HTTP_URL,
        description="Back-channel logout URL (http or https), which Keycloak itself calls: not a loopback, "
        "link-local or cloud metadata host (refused by the operator); absent: none.",
    )
    back_channel_session_required: bool = Field(
        default=True, description="Send the session id (sid) in the back-channel logout token."
    )


class ClientSettings(CrdModel):
    """Mixed into KeycloakClientSpec: the fields a client may leave out, each absent meaning not managed."""

    roles: list[ClientRole] | None = Field(
        default=None,
        max_length=ROLES_MAX,
        description="Client roles, each name at most once; empty: none of the operator's; absent: not "
        "managed. Only roles the operator created are updated or deleted.",
    )
    protocol_mappers: list[ProtocolMapper] | None = Field(
        default=None,
        max_length=MAPPERS_MAX,
        description="Protocol mappers of the client's protocol (oidc-* or saml-*), each name at most once; "
        "absent: not managed. Only mappers the "
        "operator created are updated or deleted; one of another name made by hand stays.",
    )
    default_client_scopes: list[ScopeName] | None = Field(
        default=None,
        max_length=SCOPES_MAX,
        description="Default client scopes by name (they must exist in the realm); exactly these are "
        "attached; absent: not managed (a new client gets the realm's defaults).",
    )
    optional_client_scopes: list[ScopeName] | None = Field(
        default=None,
        max_length=SCOPES_MAX,
        description="Optional client scopes by name (they must exist in the realm); exactly these are "
        "attached; absent: not managed.",
    )
    pkce_method: Literal["S256", "plain"] | None = Field(
        default=None,
        description="PKCE code challenge method required of this client; absent: not managed.",
    )
    logout: ClientLogout | None = Field(default=None, description="Logout settings; absent: not managed.")
    access_token_lifespan_seconds: int | None = Field(
        default=None,
        ge=1,
        le=INT_MAX,
        description="Access token lifespan for this client; absent: the realm's.",
    )
    post_logout_redirect_uris: list[LogoutUri] | None = Field(
        default=None,
        max_length=pt.LIST_MAX,
        description="Valid post-logout redirect URIs (no `##`); absent: not managed.",
    )

    service_account_roles: ServiceAccountRoles | None = Field(
        default=None,
        description="Realm and client roles mapped to the service-account user (needs "
        "serviceAccountsEnabled); exactly these are kept, besides the realm's default roles; absent: not "
        "managed. Roles of realm-management or of another namespace's client need a grant in the realm's "
        "spec.serviceAccountGrants.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> ClientSettings:
        _unique_names(self.roles, "roles")
        _unique_names(self.protocol_mappers, "protocolMappers")
        both = set(self.default_client_scopes or []) & set(self.optional_client_scopes or [])
        if both:
            raise ValueError(f"client scopes both default and optional: {', '.join(sorted(both))}")
        return self
