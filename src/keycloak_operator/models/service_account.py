"""A KeycloakClient's service-account role mappings, and the grants a KeycloakRealm gives for them.

A service account holding `realm-management` roles administers the realm; holding another team's client
roles, it acts as that team's users do. So such roles are mapped only when the realm's owner grants them
(spec.serviceAccountGrants on the KeycloakRealm, in the realm's namespace), never on the word of the
client's own namespace (docs/adr/0012-tenant-isolation.md). Plain realm roles, and the roles of clients
this namespace itself owns, need no grant; a composite realm role (other than the realm's default role)
does. core/replication/service_account.py decides which is which.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel

ROLES_MAX = 64  # per realm or per client: a service account with more is better served by a composite role
CLIENTS_MAX = 32
GRANTS_MAX = 256

CLIENT_ID_MAX = 255
_CLIENT_ID_RE = re.compile(pt.NO_SPACE)
CLIENT_KEYS_RULE = {
    "rule": f"self.all(k, size(k) <= {CLIENT_ID_MAX} && k.matches('{pt.NO_SPACE}'))",
    "message": "clients: keys are clientIds (printable ASCII, no space)",
}


def _once_each(roles: list[str]) -> list[str]:
    """A mapping is a set: a role named twice is refused, where it is named (the error's location is the
    list's, e.g. serviceAccountRoles.realm), as the API server refuses it (crd.py: x-kubernetes-list-type
    set)."""
    twice = sorted(r for r, n in Counter(roles).items() if n > 1)
    if twice:
        raise ValueError(f"each role at most once: {', '.join(r[:40] for r in twice[:5])} named twice")
    return roles


RoleName = Annotated[str, Field(min_length=1, max_length=255, pattern=pt.NO_CONTROL)]
ClientIdName = Annotated[str, Field(min_length=1, max_length=CLIENT_ID_MAX, pattern=pt.NO_SPACE)]
ClaimName = Annotated[str, Field(min_length=1, max_length=255, pattern=pt.NO_SPACE)]
RoleNames = Annotated[list[RoleName], Field(max_length=ROLES_MAX), AfterValidator(_once_each)]

GRANT_RULE = {
    "rule": "(has(self.roles) && size(self.roles) > 0) || (has(self.claims) && size(self.claims) > 0)",
    "message": "a grant names roles or claims",
}

ENABLED_RULE = {
    "rule": "!has(self.serviceAccountRoles) || "
    "(has(self.serviceAccountsEnabled) && self.serviceAccountsEnabled && "
    "!(has(self.publicClient) && self.publicClient))",
    "message": "spec.serviceAccountRoles needs spec.serviceAccountsEnabled: true on a confidential client",
}


class RoleRefs(CrdModel):
    """Realm roles, and client roles by clientId: a service account's mappings (exactly these, besides the
    realm's default role, which Keycloak gives every user and which is never removed), or the composites of
    a client role (exactly these)."""

    realm: RoleNames = Field(
        default_factory=list, description="Realm roles by name; they must exist in the realm."
    )
    # A plain key type: a key pattern would become patternProperties, which a CRD's schema may not hold;
    # the key's bounds are in the model's validator and in CLIENT_KEYS_RULE instead.
    clients: dict[str, RoleNames] = Field(
        default_factory=dict,
        max_length=CLIENTS_MAX,
        json_schema_extra={"maxProperties": CLIENTS_MAX},
        description="Client roles by clientId -> role names. Roles of clients declared in this namespace "
        "(this client's own included) need no grant; roles of `realm-management`, of any other built-in "
        "client or of another namespace's client need the realm's spec.serviceAccountGrants.",
    )

    @model_validator(mode="after")
    def _client_ids(self) -> RoleRefs:
        for client_id in self.clients:
            if not _CLIENT_ID_RE.match(client_id) or len(client_id) > CLIENT_ID_MAX:
                raise ValueError(f"clients: {client_id[:40]!r} is not a clientId")
        return self


class ServiceAccountGrant(CrdModel):
    """Lets KeycloakClients of `namespace` hand these roles of `clientId` (or these composite realm roles)
    to their service accounts and include them in their own client roles' composites: the latter reaches
    every user, group and service account holding such a role, whoever assigned it."""

    namespace: pt.NamespaceName = Field(
        description="Namespace whose KeycloakClients may map the roles to their service accounts and include "
        "them in their client roles' composites (reaching whoever holds those roles)."
    )
    client_id: ClientIdName | None = Field(
        default=None,
        description="The client whose roles are granted, e.g. realm-management; absent: the roles are realm "
        "roles (needed for a composite realm role).",
    )
    roles: list[RoleName] = Field(
        default_factory=list, max_length=ROLES_MAX, description="Role names of that client, e.g. view-users."
    )
    claims: list[ClaimName] = Field(
        default_factory=list,
        max_length=ROLES_MAX,
        description="Reserved top-level token claims (sub, email, preferred_username, realm_access, "
        "resource_access, groups, aud, ...) that protocol mappers of `namespace`'s clients and client "
        "scopes may write; without it a mapper writing one is refused.",
    )

    @model_validator(mode="after")
    def _grants_something(self) -> ServiceAccountGrant:
        if not self.roles and not self.claims:
            raise ValueError("a grant names roles or claims")
        return self


ServiceAccountRoles = RoleRefs  # the name its users know it by
