"""KeycloakClient: an OIDC or SAML client declared in an app namespace, replicated into a realm."""

from __future__ import annotations

from pydantic import Field, model_validator

from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models import client_settings as cs
from keycloak_operator.models import saml_client as saml
from keycloak_operator.models import service_account as sa
from keycloak_operator.models.client_settings import ClientSettings
from keycloak_operator.models.realm import RealmRef
from keycloak_operator.models.replicated import Column, ReplicatedKind, Schema
from keycloak_operator.models.saml_client import (
    OIDC_ONLY_FIELDS,
    SAML_MAPPER_TYPES,
    Protocol,
    SamlClientSettings,
)
from keycloak_operator.models.service_account import ENABLED_RULE


class KeycloakClientSpec(ClientSettings):
    realm: RealmRef = Field(description="The KeycloakRealm this client belongs to.")
    client_id: str = Field(
        min_length=1,
        max_length=255,
        pattern=pt.NO_SPACE,
        description="OIDC client_id; for a saml client, the service provider's entity id.",
    )
    protocol: Protocol = Field(
        default="openid-connect",
        description="openid-connect or saml; cannot change once created (Keycloak does not convert a "
        "client). A saml client takes none of the OIDC-only fields (publicClient, webOrigins, the flows, "
        "secretName, pkceMethod, logout, accessTokenLifespanSeconds, postLogoutRedirectUris, "
        "serviceAccountRoles).",
    )
    saml: SamlClientSettings | None = Field(
        default=None,
        description="SAML settings (protocol saml only); absent on a saml client: every field its default.",
    )
    name: str = Field(default="", max_length=255, description="Display name.")
    public_client: bool = Field(default=False, description="Public (no secret) or confidential.")
    redirect_uris: list[pt.UriText] = Field(
        default_factory=list, max_length=pt.LIST_MAX, description="Valid redirect URIs."
    )
    web_origins: list[pt.UriText] = Field(
        default_factory=list, max_length=pt.LIST_MAX, description="Allowed CORS origins."
    )
    standard_flow_enabled: bool = Field(default=True, description="Authorization code flow.")
    direct_access_grants_enabled: bool = Field(default=False, description="Resource owner password flow.")
    service_accounts_enabled: bool = Field(default=False, description="Client credentials flow.")
    secret_name: str | None = pt.object_name(
        "Confidential clients: Secret (in the client's namespace) the operator writes the client "
        "secret to; defaults to `<metadata.name>-client-secret`.",
        default=None,
    )

    @model_validator(mode="after")
    def _protocol_fields(self) -> KeycloakClientSpec:
        """Fields of the other protocol are refused by name, never silently ignored."""
        saml = self.protocol == "saml"
        if saml:
            declared = sorted(
                f"spec.{f}" for f in OIDC_ONLY_FIELDS if _field_name(f) in self.model_fields_set
            )
            if declared:
                raise ValueError(f"{', '.join(declared)}: OIDC settings, which a saml client takes none of")
        elif self.saml is not None:
            raise ValueError("spec.saml needs spec.protocol: saml")
        for m in self.protocol_mappers or []:
            if (m.protocol_mapper in SAML_MAPPER_TYPES) != saml:
                raise ValueError(
                    f"spec.protocolMappers {m.name!r}: {m.protocol_mapper} is not a mapper of protocol "
                    f"{self.protocol}"
                )
        return self

    @model_validator(mode="after")
    def _service_account_roles_need_one(self) -> KeycloakClientSpec:
        if self.service_account_roles is not None and (
            self.public_client or not self.service_accounts_enabled
        ):
            raise ValueError(ENABLED_RULE["message"])
        return self


def _field_name(camel: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)


def _schema_rules(schema: Schema) -> None:
    spec_schema = schema["properties"]["spec"]
    spec_schema.setdefault("x-kubernetes-validations", []).extend(
        [
            cs.SCOPES_DISJOINT_RULE,
            sa.ENABLED_RULE,
            saml.PROTOCOL_IMMUTABLE_RULE,
            saml.OIDC_ONLY_RULE,
            saml.SAML_BLOCK_RULE,
            saml.MAPPER_PROTOCOL_RULE,
        ]
    )
    spec = spec_schema["properties"]
    spec["saml"].setdefault("x-kubernetes-validations", []).append(saml.ENCRYPTION_RULE)
    # Each name at most once (roles and mappers are identified by name); the model checks the same.
    for field in ("roles", "protocolMappers"):
        spec[field].update({"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]})
    config = spec["protocolMappers"]["items"]["properties"]["config"]
    config["x-kubernetes-validations"] = [cs.CONFIG_RULE]
    for refs in (spec["serviceAccountRoles"], spec["roles"]["items"]["properties"]["composites"]):
        refs["properties"]["clients"]["x-kubernetes-validations"] = [sa.CLIENT_KEYS_RULE]
        # Each role at most once (a mapping is a set); the model checks the same (service_account.RoleNames).
        refs["properties"]["realm"]["x-kubernetes-list-type"] = "set"
        refs["properties"]["clients"]["additionalProperties"]["x-kubernetes-list-type"] = "set"


DECLARED = ReplicatedKind(
    kind=names.CLIENT_KIND,
    plural=names.CLIENT_PLURAL,
    short_name="kcclient",
    what="clients",
    spec=KeycloakClientSpec,
    description="An OIDC or SAML client replicated into a Keycloak realm.",
    columns=(
        Column("Client ID", ".spec.clientId"),
        Column("Realm", ".spec.realm.name"),
        Column("Phase", ".status.phase"),
        Column("Protocol", ".spec.protocol", priority=1),
        Column("PKCE", ".spec.pkceMethod", priority=1),
    ),
    schema_rules=_schema_rules,
    required=True,
    switched=True,
    token_fields=(
        "roles[].composites",
        "protocolMappers",
        "defaultClientScopes",
        "optionalClientScopes",
        "serviceAccountRoles",
    ),
)
