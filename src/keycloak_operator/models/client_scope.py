"""KeycloakClientScope: a client scope declared in an app namespace, replicated into a realm.

A client scope is a named bundle of protocol mappers that clients attach as default or optional scopes
(KeycloakClient's `defaultClientScopes` / `optionalClientScopes` name it). Its attributes are typed fields,
as a client's settings are (client_settings.py): Keycloak stores any attribute it is sent, so a mistyped
free key would look applied and do nothing.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.client_settings import (
    CONFIG_RULE,
    MAPPERS_MAX,
    SCOPE_NAME_MAX,
    OidcMapperType,
    ProtocolMapper,
)
from keycloak_operator.models.realm import RealmRef
from keycloak_operator.models.replicated import Column, ReplicatedKind, Schema

# The name travels in the OAuth `scope` parameter, space-separated: one token, and none of the characters
# the parameter or a URL path would give a meaning to.
SCOPE_NAME = r"^[A-Za-z0-9][-A-Za-z0-9_.:]*$"
TEXT_MAX = 2048
# gui.order: the consent screen sorts scopes by it; Keycloak keeps it as text, we keep it a small number.
GUI_ORDER_MAX = 100_000

MAPPERS_ONLY_OIDC_RULE = {
    # The CRD carries no defaults (models/crd.py): an omitted protocol is absent here, and is OIDC.
    "rule": "!has(self.protocol) || self.protocol != 'saml' || !has(self.protocolMappers) || "
    "size(self.protocolMappers) == 0",
    "message": "protocolMappers are OIDC mappers: a saml client scope declares none",
}


class ScopeRealmRef(RealmRef):
    namespace: str | None = pt.namespace_name(
        "Its namespace; defaults to the scope's (another one must list this namespace in its "
        "spec.clientNamespaces).",
        default=None,
    )


class ScopeProtocolMapper(ProtocolMapper):
    """One OIDC protocol mapper of the scope, identified by its name within it. The operator's client scopes
    are openid-connect only: the saml-* types a SAML client takes are refused (in the CRD's enum too)."""

    protocol_mapper: OidcMapperType = Field(description="Mapper type (Keycloak's provider id), an OIDC one.")


class KeycloakClientScopeSpec(CrdModel):
    realm: ScopeRealmRef = Field(description="The KeycloakRealm this client scope belongs to.")
    name: str = Field(
        min_length=1,
        max_length=SCOPE_NAME_MAX,
        pattern=SCOPE_NAME,
        description="The client scope's name in Keycloak, as clients request it in the `scope` parameter: "
        "letters, digits, '-', '_', '.', ':'. Unique in the realm: a name another resource or a hand-made "
        "scope holds is a Conflict.",
    )
    protocol: Literal["openid-connect", "saml"] = Field(
        default="openid-connect", description="The protocol of the clients that may attach it."
    )
    description: str = Field(
        default="", max_length=TEXT_MAX, pattern=r"^[^\x00-\x1f\x7f]*$", description="Description."
    )
    include_in_token_scope: bool = Field(
        default=True,
        description="The scope's name appears in the access token's `scope` claim (include.in.token.scope).",
    )
    display_on_consent_screen: bool = Field(
        default=True,
        description="Shown on the consent screen of clients requiring consent (display.on.consent.screen).",
    )
    consent_screen_text: str = Field(
        default="",
        max_length=TEXT_MAX,
        pattern=r"^[^\x00-\x1f\x7f]*$",
        description="Text shown on the consent screen instead of the name (consent.screen.text); empty: the "
        "name.",
    )
    gui_order: int | None = Field(
        default=None,
        ge=0,
        le=GUI_ORDER_MAX,
        description="Position on the consent screen (gui.order); absent: none.",
    )
    protocol_mappers: list[ScopeProtocolMapper] | None = Field(
        default=None,
        max_length=MAPPERS_MAX,
        description="OIDC protocol mappers, each name at most once; absent: not managed. Only mappers the "
        "operator created are updated or deleted; one made by hand under another name stays.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> KeycloakClientScopeSpec:
        seen = [m.name for m in self.protocol_mappers or []]
        if len(seen) != len(set(seen)):
            raise ValueError("protocolMappers: each name at most once")
        if self.protocol == "saml" and self.protocol_mappers:
            raise ValueError(MAPPERS_ONLY_OIDC_RULE["message"])
        return self


def _schema_rules(schema: Schema) -> None:
    spec_schema = schema["properties"]["spec"]
    spec_schema.setdefault("x-kubernetes-validations", []).append(MAPPERS_ONLY_OIDC_RULE)
    spec = spec_schema["properties"]
    spec["protocolMappers"].update({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]})
    spec["protocolMappers"]["items"]["properties"]["config"]["x-kubernetes-validations"] = [CONFIG_RULE]


DECLARED = ReplicatedKind(
    kind=names.CLIENT_SCOPE_KIND,
    plural=names.CLIENT_SCOPE_PLURAL,
    short_name="kcscope",
    what="client scopes",
    spec=KeycloakClientScopeSpec,
    description="A client scope, with its protocol mappers, replicated into a Keycloak realm.",
    columns=(
        Column("Scope", ".spec.name"),
        Column("Realm", ".spec.realm.name"),
        Column("Protocol", ".spec.protocol"),
        Column("Phase", ".status.phase"),
    ),
    schema_rules=_schema_rules,
    token_fields=("protocolMappers",),
)
