"""What a KeycloakRealm gives every user: its required actions, its default roles and its default groups.

Each is optional and, as the other settings blocks (realm_settings.py), absent means not managed: nothing is
read or written for it, and the realm's content (so its hash) is what it was before the field existed. A
declared one is managed exactly: the listed required actions (the others untouched), the exact set of
default roles, the exact set of default groups.

Default roles and groups go to EVERY new user of the realm, so only the realm owner's own things may be
named: its own realm roles (and Keycloak's offline_access and uma_authorization), the client roles of
KeycloakClients of the realm's own namespace (and of Keycloak's `account` client, whose roles Keycloak
itself makes default and which act on the user's own account only), and KeycloakGroups of its namespace.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, model_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel

# The required actions Keycloak 26.7.3 registers in a new realm (GET /admin/realms/{r}/authentication/
# required-actions on a fresh realm, seen in tests/integration/test_realm_settings.py). Another provider is
# refused by the API server; one of these a server has not registered is the realm's Error, naming it.
RequiredActionAlias = Literal[
    "CONFIGURE_RECOVERY_AUTHN_CODES",
    "CONFIGURE_TOTP",
    "TERMS_AND_CONDITIONS",
    "UPDATE_EMAIL",
    "UPDATE_PASSWORD",
    "UPDATE_PROFILE",
    "VERIFY_EMAIL",
    "VERIFY_PROFILE",
    "delete_account",
    "delete_credential",
    "idp_link",
    "update_user_locale",
    "webauthn-register",
    "webauthn-register-passwordless",
]
REQUIRED_ACTIONS_MAX = 32
PRIORITY_MAX = 1_000_000
DEFAULT_ROLES_MAX = 64
DEFAULT_ROLE_CLIENTS_MAX = 16
DEFAULT_GROUPS_MAX = 32
CLIENT_ID_MAX = 255
_CLIENT_ID_RE = re.compile(pt.NO_SPACE)
# Keycloak's administration client: its roles administer the realm, never a role for every user.
REALM_MANAGEMENT = "realm-management"
CLIENT_KEYS_RULE = {
    "rule": f"self.all(k, size(k) <= {CLIENT_ID_MAX} && k.matches('{pt.NO_SPACE}') && k != "
    f"'{REALM_MANAGEMENT}')",
    "message": "defaultRoles.clients: keys are clientIds (printable ASCII, no space), never "
    f"{REALM_MANAGEMENT}",
}
# Keycloak keeps a default action that is off, and never applies it: said here rather than found later.
DEFAULT_NEEDS_ENABLED_RULE = {
    "rule": "!(has(self.defaultAction) && self.defaultAction) || !has(self.enabled) || self.enabled",
    "message": "a required action with defaultAction: true must be enabled",
}

RoleName = Annotated[str, Field(min_length=1, max_length=255, pattern=pt.NO_CONTROL)]
RoleNames = Annotated[list[RoleName], Field(max_length=DEFAULT_ROLES_MAX)]


class RequiredAction(CrdModel):
    """One of the realm's registered required actions, by alias."""

    alias: RequiredActionAlias = Field(description="The required action's alias, as Keycloak registers it.")
    enabled: bool = Field(default=True, description="Whether users may be asked to perform it.")
    default_action: bool = Field(default=False, description="Added to every new user (needs enabled: true).")
    priority: int | None = Field(
        default=None,
        ge=0,
        le=PRIORITY_MAX,
        description="Order among the actions a user is asked for (lower first); absent: Keycloak's.",
    )

    @model_validator(mode="after")
    def _default_needs_enabled(self) -> RequiredAction:
        if self.default_action and not self.enabled:
            raise ValueError(DEFAULT_NEEDS_ENABLED_RULE["message"])
        return self


class DefaultRoles(CrdModel):
    """The composites of the realm's `default-roles-<realm>` role, which every new user holds: exactly
    these."""

    realm: RoleNames = Field(
        default_factory=list,
        description="Realm roles by name: plain ones (spec.roles of this realm, offline_access, "
        "uma_authorization); a composite one only with this realm's spec.serviceAccountGrants naming the "
        "realm's own namespace and the role.",
    )
    # A plain key type (a key pattern would be patternProperties, which a CRD may not hold); the key's bounds
    # are in the validator and in CLIENT_KEYS_RULE.
    clients: dict[str, RoleNames] = Field(
        default_factory=dict,
        max_length=DEFAULT_ROLE_CLIENTS_MAX,
        json_schema_extra={"maxProperties": DEFAULT_ROLE_CLIENTS_MAX},
        description="Client roles by clientId -> role names: clients of KeycloakClients of the realm's own "
        "namespace, or Keycloak's `account` client; another client's only with this realm's "
        "spec.serviceAccountGrants naming the realm's own namespace, the clientId and the role; never "
        "realm-management.",
    )

    @model_validator(mode="after")
    def _once_each(self) -> DefaultRoles:
        if len(self.realm) != len(set(self.realm)):
            raise ValueError("defaultRoles.realm: each role at most once")
        for client_id, roles in self.clients.items():
            if not _CLIENT_ID_RE.match(client_id) or len(client_id) > CLIENT_ID_MAX:
                raise ValueError(f"defaultRoles.clients: {client_id[:40]!r} is not a clientId")
            if client_id == REALM_MANAGEMENT:
                raise ValueError(
                    f"defaultRoles.clients.{REALM_MANAGEMENT}: administers the realm, never default"
                )
            if len(roles) != len(set(roles)):
                raise ValueError(f"defaultRoles.clients.{client_id}: each role at most once")
        return self


GroupResourceName = Annotated[
    str, Field(min_length=1, max_length=pt.SUBDOMAIN_MAX, pattern=pt.DNS1123_SUBDOMAIN)
]
