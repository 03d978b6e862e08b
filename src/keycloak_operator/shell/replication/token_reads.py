"""The realm as the token authority (core/replication/token_authority.py) needs it, read for the writers of
kinds whose fields can reach a token; read only when something declared needs it, so a realm whose mappers
name no role or audience costs a quiet round nothing more."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from keycloak_operator.core.replication.token_authority import Authority, RealmView
from keycloak_operator.shell.replication.context import InRealm

AuthorityFor = Callable[[str], Authority]  # a namespace's authority in this realm


def _usable(role: Any) -> bool:
    return isinstance(role, Mapping) and isinstance(role.get("name"), str) and isinstance(role.get("id"), str)


async def realm_view(at: InRealm, owners: Mapping[str, tuple[str, str | None]]) -> RealmView:
    """The realm's roles as read now, and `owners` (clientId -> id and owning namespace) as the caller
    knows them (after its own writes). A role without a name or an id (a server's odd answer) is absent."""
    realm_roles = {str(r["name"]): r for r in await at.admin.roles(at.remote) if _usable(r)}
    return RealmView(at.remote, realm_roles, owners)


def authority_for(at: InRealm, view: RealmView) -> AuthorityFor:
    """Each namespace's answers, with the realm resource's grants and no one else's."""
    granted_by = f"{at.realm.key.namespace}/{at.realm.key.name}"
    return lambda namespace: Authority(namespace, at.grants, granted_by, view)


def claims_only(at: InRealm) -> AuthorityFor:
    """When nothing declared names a role or an audience: claims are judged on the grants alone."""
    return authority_for(at, RealmView(at.remote, {}, {}))
