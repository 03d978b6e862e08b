"""KeycloakIdentityProvider: an identity provider (an upstream OIDC or SAML server users sign in with)
declared in an app namespace, replicated into a realm, with its mappers.

Its settings are typed fields, never a free-form config map: Keycloak stores any config key it is sent, so a
mistyped one would look applied and do nothing. The client secret is never in the resource: `clientSecret`
names a key of a Secret in the resource's own namespace (no namespace field, ADR 0012).

URLs must be https: the token request carries the client secret and the authorization code, which an http
URL would send in clear. An IdP inside the cluster must serve TLS. The pattern lets plain http to a loopback
host (localhost, 127.x.x.x, [::1]) through, but the planner refuses a loopback host unless the operator runs
with KCOP_IDP_ALLOW_LOOPBACK_HTTP (tests): Keycloak would call its own pod (core/replication/called_urls.py,
the rule for every URL Keycloak calls, which refuses link-local and metadata addresses too).

A SAML provider (`providerId: saml`) has its typed fields in `saml` (models/saml_identity_provider.py).
"""

from __future__ import annotations

from typing import Annotated, Final, Literal, get_args

from pydantic import Field, model_validator

from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.client_settings import CONFIG_MAX, CONFIG_RULE, MAPPERS_MAX, MapperConfig
from keycloak_operator.models.idp_urls import IdpUrl
from keycloak_operator.models.realm import RealmRef
from keycloak_operator.models.realm_settings import SECRET_KEY
from keycloak_operator.models.replicated import Column, ReplicatedKind, Schema
from keycloak_operator.models.saml_identity_provider import PRINCIPAL_RULE, SamlIdpSettings

# The alias is in the broker's URLs (/realms/<realm>/broker/<alias>/endpoint): one path segment.
ALIAS = r"^[A-Za-z0-9][-A-Za-z0-9_.]*$"
ALIAS_MAX = 128
TEXT_MAX = 255
GUI_ORDER_MAX = 100_000
# An OAuth scope token (RFC 6749: printable ASCII but space, '"' and '\').
SCOPE_TOKEN = r"^[\x21\x23-\x5b\x5d-\x7e]+$"
SCOPES_MAX = 32
ScopeToken = Annotated[str, Field(min_length=1, max_length=TEXT_MAX, pattern=SCOPE_TOKEN)]
# The mapper types Keycloak 26.7.3 offers an `oidc` or a `saml` provider (its mapper-types endpoint; the
# integration tests check these lists against it): a type it does not offer would be refused only when
# written. Not the advanced role and group mappers: the role or group a mapper gives is checked against the
# grant rule (core/replication/idp_mapper_rule.py), and their JSON claim-to-role lists are not read.
MapperType = Literal[
    "hardcoded-attribute-idp-mapper",
    "hardcoded-user-session-attribute-idp-mapper",
    "oidc-hardcoded-group-idp-mapper",
    "oidc-hardcoded-role-idp-mapper",
    "oidc-role-idp-mapper",
    "oidc-user-attribute-idp-mapper",
    "oidc-user-session-note-idp-mapper",
    "oidc-username-idp-mapper",
    "saml-user-attribute-idp-mapper",
    "saml-username-idp-mapper",
]
# Which of them each provider takes: Keycloak 26.7.3's mapper-types endpoint offers a `saml` provider the
# hardcoded ones (the role and group ones keep their `oidc-` ids) and its own saml-* ones.
MAPPERS_BY_PROVIDER: Final = {
    "oidc": frozenset(t for t in get_args(MapperType) if not t.startswith("saml-")),
    "saml": frozenset(
        {
            "hardcoded-attribute-idp-mapper",
            "hardcoded-user-session-attribute-idp-mapper",
            "oidc-hardcoded-group-idp-mapper",
            "oidc-hardcoded-role-idp-mapper",
            "saml-user-attribute-idp-mapper",
            "saml-username-idp-mapper",
        }
    ),
}

SECRET_RULE = {
    # The CRD carries no defaults (models/crd.py): an omitted clientAuthMethod is client_secret_post.
    "rule": "(has(self.clientAuthMethod) && self.clientAuthMethod == 'private_key_jwt') "
    "!= has(self.clientSecret)",
    "message": "clientSecret is required, except with clientAuthMethod private_key_jwt, which takes none",
}


_IS_OIDC = "self.providerId == 'oidc'"
PROVIDER_BLOCK_RULE = {
    "rule": f"has(self.oidc) == ({_IS_OIDC}) && has(self.saml) == !({_IS_OIDC})",
    "message": "spec.oidc is required with providerId oidc, spec.saml with providerId saml; each only then",
}
PROVIDER_IMMUTABLE_RULE = {
    "rule": "self.providerId == oldSelf.providerId",
    "message": "spec.providerId cannot change: delete the resource and declare a new one",
}
SAML_MAPPERS_RULE = {
    "rule": "self.providerId != 'saml' || !has(self.mappers) || self.mappers.all(m, "
    "!m.identityProviderMapper.startsWith('oidc-') || "
    "m.identityProviderMapper.startsWith('oidc-hardcoded-'))",
    "message": "spec.mappers: a saml provider takes no oidc mappers but the hardcoded role and group ones",
}
OIDC_MAPPERS_RULE = {
    "rule": "self.providerId != 'oidc' || !has(self.mappers) || "
    "self.mappers.all(m, !m.identityProviderMapper.startsWith('saml-'))",
    "message": "spec.mappers: an oidc provider takes no saml mappers",
}


class IdpRealmRef(RealmRef):
    namespace: str | None = pt.namespace_name(
        "Its namespace; defaults to the identity provider's (another one must list this namespace in its "
        "spec.identityProviderNamespaces).",
        default=None,
    )


class IdpSecretKey(CrdModel):
    """One key of a Secret in the identity provider's own namespace. No namespace field, on purpose: the
    operator reads only Secrets of the namespace that declares the resource (ADR 0012)."""

    name: str = pt.object_name("Name of the Secret, in the KeycloakIdentityProvider's namespace.")
    key: str = Field(min_length=1, max_length=pt.SUBDOMAIN_MAX, pattern=SECRET_KEY, description="Key in it.")


class OidcSettings(CrdModel):
    """The upstream OpenID Connect server and this realm's client there (Keycloak's `oidc` provider)."""

    issuer: IdpUrl | None = Field(default=None, description="Issuer (`iss`) its tokens carry; absent: none.")
    authorization_url: IdpUrl = Field(description="Authorization endpoint.")
    token_url: IdpUrl = Field(description="Token endpoint.")
    user_info_url: IdpUrl | None = Field(default=None, description="UserInfo endpoint; absent: none.")
    jwks_url: IdpUrl | None = Field(
        default=None, description="JWKS endpoint its signature keys are read from; absent: none."
    )
    logout_url: IdpUrl | None = Field(default=None, description="End-session endpoint; absent: none.")
    client_id: str = Field(
        min_length=1, max_length=TEXT_MAX, pattern=pt.NO_SPACE, description="This realm's client id there."
    )
    client_auth_method: Literal[
        "client_secret_post", "client_secret_basic", "client_secret_jwt", "private_key_jwt"
    ] = Field(default="client_secret_post", description="How the token request authenticates.")
    client_secret: IdpSecretKey | None = Field(
        default=None,
        description="The client secret: a key of a Secret in this resource's namespace. Sent to Keycloak "
        "and never shown in status, events or logs; a change to the Secret is sent on the next round. "
        "Required, except with clientAuthMethod private_key_jwt.",
    )
    default_scopes: list[ScopeToken] = Field(
        default_factory=list,
        max_length=SCOPES_MAX,
        description="Scopes asked for (config defaultScope, space-separated); empty: Keycloak's (openid).",
    )
    sync_mode: Literal["IMPORT", "LEGACY", "FORCE"] = Field(
        default="LEGACY",
        description="When user data is taken from the provider: IMPORT on first login, FORCE on every login, "
        "LEGACY as each mapper says.",
    )
    validate_signature: bool = Field(default=False, description="Check the signature of the tokens.")
    pkce_enabled: bool = Field(default=False, description="Use PKCE (S256) in the authorization request.")

    @model_validator(mode="after")
    def _secret(self) -> OidcSettings:
        if (self.client_auth_method == "private_key_jwt") != (self.client_secret is None):
            raise ValueError(SECRET_RULE["message"])
        return self


class IdpMapper(CrdModel):
    """One identity provider mapper, identified by its name within the identity provider."""

    name: str = Field(min_length=1, max_length=TEXT_MAX, pattern=pt.NO_CONTROL, description="Mapper name.")
    identity_provider_mapper: MapperType = Field(description="Mapper type (Keycloak's provider id).")
    config: MapperConfig = Field(
        default_factory=dict,
        max_length=CONFIG_MAX,
        json_schema_extra={"maxProperties": CONFIG_MAX},
        description="The mapper's settings as Keycloak names them, every value a string: e.g. `claim`, "
        "`user.attribute`, `attribute.value`, `role`, `syncMode`.",
    )


class KeycloakIdentityProviderSpec(CrdModel):
    realm: IdpRealmRef = Field(description="The KeycloakRealm this identity provider belongs to.")
    alias: str = Field(
        min_length=1,
        max_length=ALIAS_MAX,
        pattern=ALIAS,
        description="The identity provider's alias, its key in the realm and part of its broker URLs: "
        "letters, digits, '-', '_', '.'. An alias another resource or a hand-made provider holds is a "
        "Conflict.",
    )
    provider_id: Literal["oidc", "saml"] = Field(
        description="The protocol: `oidc` (settings in `oidc`) or `saml` (settings in `saml`); cannot change."
    )
    display_name: str = Field(
        default="",
        max_length=TEXT_MAX,
        pattern=r"^[^\x00-\x1f\x7f]*$",
        description="Shown on the login page.",
    )
    enabled: bool = Field(default=True, description="Whether users may sign in through it.")
    trust_email: bool = Field(default=False, description="Take the provider's e-mail addresses as verified.")
    store_token: bool = Field(default=False, description="Store the provider's tokens for the user.")
    hide_on_login: bool = Field(default=False, description="Leave its button off the login page.")
    gui_order: int | None = Field(
        default=None, ge=0, le=GUI_ORDER_MAX, description="Position of its button on the login page."
    )
    first_broker_login_flow_alias: str | None = Field(
        default=None,
        min_length=1,
        max_length=TEXT_MAX,
        pattern=pt.NO_CONTROL,
        description="The flow run on a user's first login through it; absent: the realm's own.",
    )
    oidc: OidcSettings | None = Field(
        default=None, description="The upstream OpenID Connect server (providerId oidc only)."
    )
    saml: SamlIdpSettings | None = Field(
        default=None, description="The upstream SAML identity provider (providerId saml only)."
    )
    mappers: list[IdpMapper] | None = Field(
        default=None,
        max_length=MAPPERS_MAX,
        description="Identity provider mappers, each name at most once; absent: not managed; `[]`: every "
        "mapper the operator created is deleted. Only mappers the operator created are updated or deleted; "
        "one of another name made by hand stays.",
    )

    @model_validator(mode="after")
    def _unique_mappers(self) -> KeycloakIdentityProviderSpec:
        seen = [m.name for m in self.mappers or []]
        if len(seen) != len(set(seen)):
            raise ValueError("mappers: each name at most once")
        return self

    @model_validator(mode="after")
    def _settings_of_the_provider(self) -> KeycloakIdentityProviderSpec:
        if (self.oidc is not None) != (self.provider_id == "oidc") or (self.saml is not None) != (
            self.provider_id == "saml"
        ):
            raise ValueError(PROVIDER_BLOCK_RULE["message"])
        offered = MAPPERS_BY_PROVIDER[self.provider_id]
        for m in self.mappers or []:
            if m.identity_provider_mapper not in offered:
                raise ValueError(
                    f"spec.mappers {m.name!r}: {m.identity_provider_mapper} is not a mapper of a "
                    f"{self.provider_id} provider"
                )
        return self


def _schema_rules(schema: Schema) -> None:
    spec = schema["properties"]["spec"]["properties"]
    spec["oidc"].setdefault("x-kubernetes-validations", []).append(SECRET_RULE)
    spec["saml"].setdefault("x-kubernetes-validations", []).append(PRINCIPAL_RULE)
    schema["properties"]["spec"].setdefault("x-kubernetes-validations", []).extend(
        [PROVIDER_BLOCK_RULE, PROVIDER_IMMUTABLE_RULE, SAML_MAPPERS_RULE, OIDC_MAPPERS_RULE]
    )
    spec["mappers"].update({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]})
    spec["mappers"]["items"]["properties"]["config"]["x-kubernetes-validations"] = [CONFIG_RULE]


DECLARED = ReplicatedKind(
    kind=names.IDENTITY_PROVIDER_KIND,
    plural=names.IDENTITY_PROVIDER_PLURAL,
    short_name="kcidp",
    what="identity providers",
    spec=KeycloakIdentityProviderSpec,
    description="An identity provider (an upstream OIDC or SAML server), with its mappers, replicated into a "
    "Keycloak realm.",
    columns=(
        Column("Alias", ".spec.alias"),
        Column("Realm", ".spec.realm.name"),
        Column("Provider", ".spec.providerId"),
        Column("Phase", ".status.phase"),
        Column("Enabled", ".spec.enabled", "boolean", priority=1),
        Column("Client ID", ".spec.oidc.clientId", priority=1),
    ),
    schema_rules=_schema_rules,
    switched=True,
    token_fields=("mappers",),
)
