"""An identity provider's mappers, once the provider itself is written (identity_providers.py): the
grant rule on the role and group mappers it declares (core/replication/idp_mapper_rule.py), its mappers
brought to what it declares (core/replication/idp_mappers.py plans them), and the mappers the operator wrote
that its namespace may no longer give removed."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from keycloak_operator.core.replication import identity_provider as idp
from keycloak_operator.core.replication import idp_mapper_rule as rule
from keycloak_operator.core.replication import idp_mappers
from keycloak_operator.core.replication import service_account as sa
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import Resource, ScopePlan, Verdict
from keycloak_operator.kernel.events import Event
from keycloak_operator.shell import metrics
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.identity_provider import IdentityProviderAdmin
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.mapper_sync import MapperPlan, Mappers

MAPPER_KIND = "IdentityProviderMapper"  # the metrics' kind for a provider's mappers
# The realm's groups, read for the mappers that hand one out (admin/group.GroupAdmin, or a test's fake).
GroupsOf = Callable[[KeycloakAdmin], Any]


def _ours(mapper: Mapping[str, Any]) -> bool:
    """A mapper the operator wrote: its content hash in the config (idp_mappers.py)."""
    return idp_mappers.MAPPER_HASH in idp_mappers.mapper_config(mapper)


async def realm_view(at: InRealm, groups_of: GroupsOf) -> tuple[sa.RealmView, dict[str, str | None]]:
    """What the authority needs to judge role and group mappers: the realm's roles, its clients' owners
    and its groups' owners. Raises AdminError."""
    owners = sa.client_owners(await at.admin.clients(at.remote))
    roles = await at.admin.roles(at.remote)
    groups = rule.group_owners(await groups_of(at.admin).groups(at.remote))
    realm_roles = {
        str(o["name"]): o for o in roles if isinstance(o, Mapping) and isinstance(o.get("name"), str)
    }
    return sa.RealmView(at.remote, realm_roles, owners, {}), groups


async def with_mapper_rule(at: InRealm, declared: list[Resource], groups_of: GroupsOf) -> list[Resource]:
    """Each provider whose mappers hand out a role or a group it may not give, held with that problem
    (idp_mapper_rule.py). The realm's roles, clients and groups are read only when some provider's
    mappers give one; if they cannot be read, those providers wait, the others go on."""
    asking = {r.key for r in declared if r.problem is None and not r.deleting and rule.hands_out(r.content)}
    if not asking:
        return declared
    try:
        view, groups = await realm_view(at, groups_of)
    except AdminError as e:
        failed = Verdict("Error", "ReadFailed", f"spec.mappers: the realm's roles, clients or groups: {e}")
        return [replace(r, problem=failed) if r.key in asking else r for r in declared]
    granted_by = f"{at.realm.key.namespace}/{at.realm.key.name}"
    out = []
    for r in declared:
        found = (
            rule.refusals(r.content, r.key.namespace, at.grants, granted_by, view, groups)
            if r.key in asking
            else {}
        )
        out.append(r if not found else replace(r, problem=next(iter(found.values()))))
    return out


async def revoke_held(
    rnd: Round,
    api: IdentityProviderAdmin,
    at: InRealm,
    declared: list[Resource],
    scope: ScopePlan,
    limiter: WriteLimiter,
    groups_of: GroupsOf,
) -> None:
    """Every provider whose mappers `sync_mappers` did not bring to its spec this round (`spec.mappers` left
    out, or the provider held by a problem, a refused mapper's included): the role and group mappers the
    operator wrote for it are judged as they stand in Keycloak, and those its namespace may no longer give
    are deleted, though nothing else is written for it: the access goes with the grant (one GET per such
    provider; the realm's roles, clients and groups only when one of them holds such a mapper)."""
    granted_by = f"{at.realm.key.namespace}/{at.realm.key.name}"
    found: tuple[sa.RealmView, dict[str, str | None]] | None = None
    for r in sorted(declared, key=lambda r: str(r.key)):
        alias = scope.remote_ids.get(r.key)
        verdict = rnd.verdicts.get(r.key)
        brought = verdict is not None and verdict.phase == "Ready" and idp.MAPPERS in r.content
        if r.deleting or alias is None or brought:
            continue
        try:
            handing_out = rule.held_handing_out(await api.mappers(at.remote, alias), _ours)
            if not handing_out:
                continue
            found = found or await realm_view(at, groups_of)
            view, groups = found
            gone = rule.held_refusals(
                handing_out, _ours, r.key.namespace, at.grants, granted_by, view, groups
            )
            for m in gone:
                await limiter.acquire(r.key.namespace)
                await api.write_mapper(at.remote, alias, "delete", str(m["id"]), None)
                metrics.replication_write(MAPPER_KIND, "delete")
        except AdminError:
            rnd.failed = True
            continue
        if gone:
            listed = ", ".join(sorted(str(m.get("name")) for m in gone))
            rnd.note(r.key, Event("Warning", "MapperRevoked", f"deleted mappers no longer allowed: {listed}"))


def mappers(api: IdentityProviderAdmin, realm: str) -> Mappers:
    """A provider's mappers, read through their own endpoint (one GET per provider declaring mappers)."""

    async def read(_r: Resource, alias: str, _written: bool) -> Any:
        return await api.mappers(realm, alias)

    def plan(r: Resource, current: Any) -> tuple[MapperPlan, Verdict | None]:
        return idp_mappers.plan_mappers(r.content, current), None  # refused ones hold the provider whole

    async def write(alias: str, w: Any) -> None:
        await api.write_mapper(realm, alias, w.operation, w.remote_id, w.body)

    return Mappers(MAPPER_KIND, idp.MAPPERS, "mappers", read, plan, write)
