"""A declared client role's composites (spec.roles[].composites): the realm and client roles it includes,
under the grant rule of service-account roles (service_account.py). Pure; the shell reads and writes.

A composite hands whoever holds the role everything it includes, so including a role of `realm-management`
or of another namespace's client is the same act as mapping it to a service account, and needs the same
grant from the realm's owner. Declared composites are an exact set; an absent `composites` is not managed.
A role's composites not granted: the client is Forbidden, nothing is added to that role, and an ungranted
composite it holds is removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from keycloak_operator.core.replication.client_parts import COMPOSITES, ROLES
from keycloak_operator.core.replication.roles import owner_of
from keycloak_operator.core.replication.service_account import (
    Grant,
    Held,
    MappingPlan,
    RealmView,
    plan_role_set,
)


def declared(content: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Role name -> its declared composites, for the roles that declare them."""
    return {r["name"]: r[COMPOSITES] for r in content.get(ROLES) or [] if COMPOSITES in r}


def held_composites(answer: Any, view: RealmView) -> Held:
    """Keycloak's GET roles/{name}/composites: role representations, `clientRole` and `containerId` (the
    realm's id, or the client's). A client the view does not know is keyed by its id with a space before
    it: no grant can name that (a grant's clientId has no space), and no client the operator marked has it
    (nor does a KeycloakClient's clientId), so it needs a grant no one gave, and is removed."""
    if not isinstance(answer, list):
        return Held()
    by_id = {uuid: cid for cid, (uuid, _) in view.clients.items()}
    realm: dict[str, str] = {}
    clients: dict[str, tuple[str, dict[str, str]]] = {}
    for r in answer:
        if (
            not isinstance(r, Mapping)
            or not isinstance(r.get("name"), str)
            or not isinstance(r.get("id"), str)
        ):
            continue
        container = r.get("containerId")
        if r.get("clientRole") is True and isinstance(container, str):
            cid = by_id.get(container, f"unknown {container}")
            clients.setdefault(cid, (container, {}))[1][r["name"]] = r["id"]
        elif r.get("clientRole") is not True:
            realm[r["name"]] = r["id"]
    return Held(realm, clients)


def plan_composites(
    role: str,
    composites: Mapping[str, Any] | None,
    namespace: str,
    grants: Iterable[Grant],
    granted_by: str,
    view: RealmView,
    held: Held,
) -> MappingPlan:
    """The writes that make the role `role` of a client of `namespace` include exactly `composites`; None
    (not declared, or the client not to be written): only composites needing a grant and lacking one go."""
    where = f"spec.roles[{role}].composites"
    return plan_role_set(
        composites,
        where=where,
        namespace=namespace,
        grants=grants,
        granted_by=granted_by,
        view=view,
        held=held,
        keep_default=False,
    )


def owned_roles(answer: Any, owner: str) -> dict[str, bool]:
    """A client's roles as listed (briefRepresentation=false) -> the ones carrying `owner` (the client
    resource's `namespace/name`: those client_parts.py manages), each with whether it may hold composites
    (anything but `composite: false`). Roles made by hand are never the operator's to change."""
    if not isinstance(answer, list):
        return {}
    return {
        r["name"]: r.get("composite") is not False
        for r in answer
        if isinstance(r, Mapping) and isinstance(r.get("name"), str) and owner_of(r) == owner
    }
