"""KeycloakGroup: a group declared in an app namespace, replicated into a realm, with its attributes and its
realm and client role mappings; `parent` makes it a subgroup of another KeycloakGroup of the same namespace.

A group's role mappings are exact: what a marked group holds beyond what it declares is removed. Client
roles may only name clients a KeycloakClient of the group's own namespace declares (ADR 0012: another
team's client roles are out of its reach).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field, model_validator

from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.kernel.names import ATTRIBUTE_PREFIX as MARKER_PREFIX
from keycloak_operator.models.base import CrdModel
from keycloak_operator.models.realm import RealmRef
from keycloak_operator.models.replicated import Column, ReplicatedKind, Schema

# A group's name is one segment of its path (`/parent/child`): no '/' (which Keycloak would have to escape)
# nor a lookalike of it (U+2044, U+2215, U+FF0F, U+29F8), no control characters (C0, DEL, C1), no bidi
# controls or zero-width characters (which would make two names that read the same), and not blank: it
# neither starts nor ends with a space. Letters of any script and inner spaces are fine. The characters are
# written literally (not as escapes) so that Python's re and the API server's Go regexp read them alike.
_NOT_IN_NAME = (
    "\\x00-\\x1f\\x7f-\\x9f/"
    + "\u2044\u2215\uff0f\u29f8"  # slashes that look like '/'
    + "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\u061c\ufeff"  # zero-width and bidi
)
_SPACE = " \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
GROUP_NAME = f"^[^{_NOT_IN_NAME}{_SPACE}]([^{_NOT_IN_NAME}]*[^{_NOT_IN_NAME}{_SPACE}])?$"
NAME_MAX = 255
# Attribute keys as Keycloak's strictest check (the user profile's) accepts them; values are free text.
ATTRIBUTE_KEY = r"^[A-Za-z0-9][-A-Za-z0-9_.]*$"
ATTRIBUTE_KEY_MAX = 255
# Keycloak 26.7.3 stores a group attribute value in GROUP_ATTRIBUTE.VALUE, NVARCHAR(255) since its 2.5.0
# changelog (jpa-changelog-2.5.0.xml; never widened since, keycloak#15685, #34981): a longer value fails
# the write (or is cut, by database). 255 characters, as the column holds.
ATTRIBUTE_VALUE_MAX = 255
ATTRIBUTES_MAX = 32
VALUES_MAX = 16
ROLES_MAX = 64
CLIENTS_MAX = 16
CLIENT_ID_MAX = 255

_ATTRIBUTE_KEY_RE = re.compile(ATTRIBUTE_KEY)

ATTRIBUTE_KEYS_RULE = {
    # The marker's attributes are the operator's: a spec that named one could forge or erase ownership.
    "rule": f"self.all(k, size(k) <= {ATTRIBUTE_KEY_MAX} && k.matches('{ATTRIBUTE_KEY}') && "
    f"!k.startsWith('{MARKER_PREFIX}'))",
    "message": f"attribute keys: letters, digits, '.', '_', '-', none starting with '{MARKER_PREFIX}'",
}
CLIENT_KEYS_RULE = {
    "rule": f"self.all(k, size(k) <= {CLIENT_ID_MAX} && k.matches('{pt.NO_SPACE}'))",
    "message": "clientRoles keys are clientIds: printable ASCII, no space",
}
# On the whole object (the only place CEL sees metadata.name): a group is never its own parent.
NOT_OWN_PARENT_RULE = {
    "rule": "!has(self.spec.parent) || self.spec.parent != self.metadata.name",
    "message": "spec.parent: a group cannot be its own parent",
}


def _attributes(value: dict[str, list[str]]) -> dict[str, list[str]]:
    for k, values in value.items():
        if len(k) > ATTRIBUTE_KEY_MAX or not _ATTRIBUTE_KEY_RE.match(k):
            raise ValueError(f"attribute key {k[:40]!r}: letters, digits, '.', '_', '-'")
        if k.startswith(MARKER_PREFIX):
            raise ValueError(
                f"attribute key {k[:40]!r}: keys starting with {MARKER_PREFIX!r} are the operator's"
            )
        if len(values) != len(set(values)):
            raise ValueError(f"attribute {k!r}: each value at most once (Keycloak keeps them as a set)")
    return value


def _client_roles(value: dict[str, list[str]]) -> dict[str, list[str]]:
    for client_id, roles in value.items():
        if not client_id or len(client_id) > CLIENT_ID_MAX or not re.match(pt.NO_SPACE, client_id):
            raise ValueError(f"clientRoles key {client_id[:40]!r}: a clientId, printable ASCII, no space")
        if len(roles) != len(set(roles)):
            raise ValueError(f"clientRoles.{client_id}: each role at most once")
    return value


AttributeValue = Annotated[str, Field(max_length=ATTRIBUTE_VALUE_MAX, pattern=r"^[^\x00-\x1f\x7f]*$")]
RoleName = Annotated[str, Field(min_length=1, max_length=255, pattern=pt.NO_CONTROL)]
Attributes = Annotated[
    dict[str, Annotated[list[AttributeValue], Field(min_length=1, max_length=VALUES_MAX)]],
    AfterValidator(_attributes),
]
ClientRoles = Annotated[
    dict[str, Annotated[list[RoleName], Field(min_length=1, max_length=ROLES_MAX)]],
    AfterValidator(_client_roles),
]


class GroupRealmRef(RealmRef):
    namespace: str | None = pt.namespace_name(
        "Its namespace; defaults to the group's (another one must list this namespace in its "
        "spec.clientNamespaces).",
        default=None,
    )


class KeycloakGroupSpec(CrdModel):
    realm: GroupRealmRef = Field(description="The KeycloakRealm this group belongs to.")
    name: str = Field(
        min_length=1,
        max_length=NAME_MAX,
        pattern=GROUP_NAME,
        description="The group's name in Keycloak (one segment of its path: no '/'). Unique among its "
        "siblings: a path another resource or a hand-made group holds is a Conflict.",
    )
    parent: str | None = pt.object_name(
        "metadata.name of another KeycloakGroup in this namespace and the same realm: this group is its "
        "subgroup. Absent: a top-level group. Until the parent is Ready this group is Pending.",
        default=None,
    )
    attributes: Attributes = Field(
        default_factory=dict,
        max_length=ATTRIBUTES_MAX,
        json_schema_extra={"maxProperties": ATTRIBUTES_MAX},
        description="Attributes, each a list of distinct values (Keycloak keeps them as a set). Exact: an "
        f"attribute added by hand is removed. Keys starting with '{MARKER_PREFIX}' are the operator's.",
    )
    realm_roles: list[RoleName] = Field(
        default_factory=list,
        max_length=ROLES_MAX,
        description="Realm roles mapped to the group, each at most once. Exact: a mapping added by hand is "
        "removed. A role the realm does not hold leaves the group Pending, with nothing written.",
    )
    client_roles: ClientRoles = Field(
        default_factory=dict,
        max_length=CLIENTS_MAX,
        json_schema_extra={"maxProperties": CLIENTS_MAX},
        description="Client roles mapped to the group: clientId -> role names. Clients a KeycloakClient "
        "of this namespace holds in Keycloak; any other client's role (another team's, realm-management) "
        "only with the realm's spec.serviceAccountGrants naming this namespace, the clientId and the role "
        "(else the group is Forbidden, with nothing written). Exact, as realmRoles.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> KeycloakGroupSpec:
        if len(self.realm_roles) != len(set(self.realm_roles)):
            raise ValueError("realmRoles: each role at most once")
        return self


def _schema_rules(schema: Schema) -> None:
    schema["x-kubernetes-validations"] = [NOT_OWN_PARENT_RULE]
    spec = schema["properties"]["spec"]["properties"]
    spec["attributes"]["x-kubernetes-validations"] = [ATTRIBUTE_KEYS_RULE]
    spec["clientRoles"]["x-kubernetes-validations"] = [CLIENT_KEYS_RULE]
    # Each role at most once (a mapping is a set); the model checks the same.
    spec["realmRoles"]["x-kubernetes-list-type"] = "set"
    spec["clientRoles"]["additionalProperties"]["x-kubernetes-list-type"] = "set"
    spec["attributes"]["additionalProperties"]["x-kubernetes-list-type"] = "set"


DECLARED = ReplicatedKind(
    kind=names.GROUP_KIND,
    plural=names.GROUP_PLURAL,
    short_name="kcgroup",
    what="groups",
    spec=KeycloakGroupSpec,
    description="A group, with its attributes and its realm and client role mappings, replicated into a "
    "Keycloak realm; spec.parent makes it a subgroup of another KeycloakGroup of the same namespace.",
    columns=(
        Column("Group", ".spec.name"),
        Column("Parent", ".spec.parent"),
        Column("Realm", ".spec.realm.name"),
        Column("Phase", ".status.phase"),
    ),
    schema_rules=_schema_rules,
    token_fields=("realmRoles", "clientRoles"),
)
