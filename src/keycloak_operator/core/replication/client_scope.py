"""The client scope kind: a KeycloakClientScope's representation in Keycloak, its scope (every client scope
of one realm), its protocol mappers and the bodies of its writes.

A client scope is identified in Keycloak by a generated id and named by its name, unique within its realm.
Like a client it lives in a realm (planned once the realm is settled, allowed by the realm's
`clientNamespaces`) and is written with the login that acts for the realm. It is planned before the realm's
clients, so that a client naming it in `defaultClientScopes` finds it in the same round.

Its protocol mappers are part of its content (a change to them changes its hash) but are written through
their own endpoints, as a client's are, with the same rules (client_parts.plan_mappers): only mappers the
operator created are updated or deleted, a declared name held by a hand-made mapper is a conflict.

A client scope has no `enabled` switch: revocation of a scope whose namespace lost access skips the disable
step and deletes it once twice the grace has passed.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Final

from keycloak_operator.core.replication import adoption, client_parts
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.in_realm import declared
from keycloak_operator.core.replication.marker import MARKER_ATTRIBUTES, marked
from keycloak_operator.core.replication.plan import Create, Update
from keycloak_operator.core.replication.resources import (
    RealmTarget,
)
from keycloak_operator.core.replication.sync import (
    NO_REVOCATION,
    Resource,
    Revocation,
    ScopePlan,
    plan_scope,
)
from keycloak_operator.kernel import names
from keycloak_operator.models.client_scope import KeycloakClientScopeSpec

KIND: Final = names.CLIENT_SCOPE_KIND
MAPPERS: Final = client_parts.MAPPERS
# Written by calls of their own: left out of the scope's POST and PUT and of its drift check.
SUBRESOURCES: Final = (MAPPERS,)
# The attributes a client scope's typed fields become; each is always sent (an absent optional one as ""),
# so a field removed from the spec is cleared in Keycloak, which keeps attributes a PUT does not name.
INCLUDE_IN_TOKEN_SCOPE: Final = "include.in.token.scope"
DISPLAY_ON_CONSENT_SCREEN: Final = "display.on.consent.screen"
CONSENT_SCREEN_TEXT: Final = "consent.screen.text"
GUI_ORDER: Final = "gui.order"

Obj = Mapping[str, Any]


def _flag(value: bool) -> str:
    return "true" if value else "false"


def scope_content(spec: KeycloakClientScopeSpec) -> dict[str, Any]:
    """The client scope as declared; its mappers only when declared (absent: not managed)."""
    content: dict[str, Any] = {
        "name": spec.name,
        "description": spec.description,
        "protocol": spec.protocol,
        "attributes": {
            INCLUDE_IN_TOKEN_SCOPE: _flag(spec.include_in_token_scope),
            DISPLAY_ON_CONSENT_SCREEN: _flag(spec.display_on_consent_screen),
            CONSENT_SCREEN_TEXT: spec.consent_screen_text,
            GUI_ORDER: "" if spec.gui_order is None else str(spec.gui_order),
        },
    }
    if spec.protocol_mappers is not None:
        content[MAPPERS] = [
            {"name": m.name, "protocolMapper": m.protocol_mapper, "config": dict(sorted(m.config.items()))}
            for m in sorted(spec.protocol_mappers, key=lambda m: m.name)
        ]
    return content


def scope_resource(
    obj: Obj, realms: Mapping[ObjectKey, RealmTarget], unreadable: AbstractSet[str] = frozenset()
) -> Resource:
    """A client scope, with a problem when its realm is unknown or does not allow the scope's namespace."""
    d = declared(obj, KeycloakClientScopeSpec, realms, unreadable, "client scopes")
    if isinstance(d, Resource):
        return d
    # Clients of any namespace may attach a hand-made scope, and only their own namespace's once it is marked
    # (client_parts.usable_scopes): adopting one would cut the others off, or let one team shape their tokens.
    flags = d.flags | adoption.flags(
        obj, "a client scope is never adopted: clients of other namespaces may use it"
    )
    return Resource(d.key, d.spec.name, scope_content(d.spec), problem=d.problem, parent=d.parent, **flags)


def plan_client_scopes(
    scopes: Sequence[Resource],
    observed: Iterable[Obj],
    namespaces: Container[str] | None = None,
    *,
    revocation: Revocation = NO_REVOCATION,
) -> ScopePlan:
    """Every client scope of one realm, diffed whole against the realm's client scopes as listed (the
    built-in ones, unmarked, hold their names: declaring `profile` is a Conflict)."""
    plan = plan_scope(
        KIND,
        scopes,
        observed,
        remote_id_of="id",
        natural_key_of="name",
        subresources=SUBRESOURCES,
        compare_attributes=True,
        namespaces=namespaces,
        revocation=revocation,
    )
    plan.disables = []  # no switch to turn off: revocation keeps the scope until it deletes it
    return plan


def upsert_body(op: Create | Update) -> dict[str, Any]:
    """A create's body (marked, mappers left to their own endpoints); an update also names its id."""
    body = {k: v for k, v in marked(op.content, op.key).items() if k not in SUBRESOURCES}
    return body if isinstance(op, Create) else {**body, "id": op.remote_id}


def release_body(current: Obj) -> dict[str, Any]:
    """Preserve on delete: the scope as read, its marker's attributes emptied (no longer the operator's)."""
    attributes = dict(current.get("attributes") or {})
    attributes.update(dict.fromkeys(MARKER_ATTRIBUTES, ""))
    return {**{k: v for k, v in current.items() if k not in SUBRESOURCES}, "attributes": attributes}


def plan_mappers(content: Obj, observed_scope: Obj) -> client_parts.PartsPlan:
    """The scope's mapper writes (none when it declares no mappers), as a client's (client_parts.py)."""
    return client_parts.plan_mappers(content, observed_scope.get(MAPPERS))
