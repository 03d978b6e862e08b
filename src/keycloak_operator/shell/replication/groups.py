"""Writes a realm's groups (core/replication/group.py plans them) level by level, then their role mappings.
Runs after the clients' writer, so that a group mapping a client role declared in the same round finds it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from keycloak_operator.core.replication import group
from keycloak_operator.core.replication import token_authority as ta
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.plan import Create, Delete, Update
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import (
    Release,
    Resource,
    ScopeOperation,
    ScopePlan,
    Verdict,
)
from keycloak_operator.kernel import names
from keycloak_operator.kernel.events import Event
from keycloak_operator.shell import metrics
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.group import GroupAdmin
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.executor import write_scope
from keycloak_operator.shell.replication.realm_reads import RealmReads
from keycloak_operator.shell.replication.token_reads import authority_for

MAPPING_KIND = "GroupRoleMapping"  # the metrics' kind for a group's role mapping writes

Obj = dict[str, Any]


class GroupApi(Protocol):
    async def groups(self, realm: str) -> list[Obj]: ...
    async def group(self, realm: str, group_id: str) -> Obj: ...
    async def create(self, realm: str, parent_id: str | None, body: Obj) -> str: ...
    async def update(self, realm: str, group_id: str, body: Obj) -> None: ...
    async def move(self, realm: str, group_id: str, name: str, parent_id: str | None) -> None: ...
    async def delete(self, realm: str, group_id: str) -> None: ...
    async def write_mappings(
        self, realm: str, group_id: str, client_uuid: str | None, add: bool, roles: Sequence[Obj]
    ) -> None: ...


class Lookup:
    """The realm's roles and clients, each read at most once per round and only when needed."""

    def __init__(self, admin: KeycloakAdmin, realm: str, reads: RealmReads) -> None:
        self.admin, self.realm, self.reads = admin, realm, reads
        self._roles: dict[str, Obj] | None = None
        self._clients: list[Obj] | None = None
        self._client_roles: dict[str, dict[str, Obj]] = {}

    async def realm_roles(self) -> dict[str, Obj]:
        if self._roles is None:
            self._roles = {str(r.get("name")): r for r in await self.admin.roles(self.realm)}
        return self._roles

    async def clients(self) -> list[Obj]:
        if self._clients is None:
            self._clients = [c for c in await self.admin.clients(self.realm) if isinstance(c, dict)]
        return self._clients

    async def client_uuid(self, client_id: str) -> str | None:
        return next((str(c["id"]) for c in await self.clients() if c.get("clientId") == client_id), None)

    async def client_roles(self, uuid: str) -> dict[str, Obj]:
        if uuid not in self._client_roles:
            found = await self.reads.client_roles(uuid)  # as the clients' steps listed them this round
            self._client_roles[uuid] = {str(r.get("name")): r for r in found if isinstance(r, dict)}
        return self._client_roles[uuid]

    async def owners(self) -> dict[str, tuple[str, str | None]]:
        """clientId -> (id, the namespace its marker names), for the token authority."""
        return ta.client_owners(await self.clients())

    async def available(
        self, groups: Sequence[Resource], grants: Sequence[ta.Grant]
    ) -> tuple[group.Available, dict[str, tuple[str, str | None]]]:
        """What the declared groups may map, and the clients' owners; nothing is read for groups that map
        nothing. Roles are read only of the clients a group's namespace may map (its own, by marker, or
        granted to it): naming others costs no read."""
        live = [g for g in groups if not g.deleting and g.problem is None and g.content]
        realm_roles = (
            frozenset(await self.realm_roles())
            if any(g.content[group.REALM_ROLES] for g in live)
            else frozenset()
        )
        wanted = {(g.key.namespace, c) for g in live for c in g.content[group.CLIENT_ROLES]}
        owners = await self.owners() if wanted else {}
        granted = {(g.namespace, g.client_id) for g in grants}
        readable = {c for ns, c in wanted if c in owners and (owners[c][1] == ns or (ns, c) in granted)}
        client_roles = {c: frozenset(await self.client_roles(owners[c][0])) for c in sorted(readable)}
        return group.Available(realm_roles, client_roles, {}), owners


class GroupWriter:
    def __init__(self, limiter: WriteLimiter, api: Callable[[KeycloakAdmin], GroupApi] = GroupAdmin) -> None:
        self.limiter = limiter
        self.api = api

    async def sync(self, rnd: Round, at: InRealm) -> None:
        """The realm's groups, diffed whole against its group tree; then each group's role mappings.

        Nothing is read when no KeycloakGroup targets the realm: a realm's tree may be large (synced from
        LDAP, say) and is none of the operator's business then. A group's finalizer keeps it declared until
        its object is gone, so only a group whose resource went without one (its finalizer removed by
        hand) is left behind; it is deleted as an orphan the next time a group is declared in the realm.
        A read that fails is said on the groups (Error, ReadFailed), never on the realm: its clients and
        the other kinds go on."""
        declared = [c for c in at.children if c.key.kind == group.KIND]
        if not declared:
            return
        api, lookup = self.api(at.admin), Lookup(at.admin, at.remote, at.reads)
        declared_clients: dict[str, set[str]] = {}
        for c in at.children:
            if c.key.kind == names.CLIENT_KIND and not c.deleting:
                declared_clients.setdefault(c.key.namespace, set()).add(c.natural_key)
        try:
            observed = await api.groups(at.remote)
            available, owners = await lookup.available(declared, at.grants)
        except AdminError as e:
            rnd.failed = True  # retried soon, as a failed write is
            for g in declared:
                rnd.verdicts[g.key] = g.problem or Verdict(
                    "Error", "ReadFailed", f"the realm's groups could not be read, nothing was written: {e}"
                )
            return
        view = ta.RealmView(at.remote, await lookup.realm_roles() if available.realm_roles else {}, owners)
        available = group.Available(
            available.realm_roles,
            available.client_roles,
            {ns: frozenset(ids) for ns, ids in declared_clients.items()},
            authority_for(at, view),
        )
        scope, planned = group.plan_groups(
            declared, observed, available, at.watched, revocation=at.revocation
        )
        by_id = {str(o["id"]): o for o in observed if isinstance(o, Mapping) and "id" in o}
        by_key = {g.key: g for g in planned}

        async def write(op: ScopeOperation) -> None:
            await self._write(api, at.remote, scope, by_key, by_id, op)

        # A stage at a time: a child's create finds its parent's id in `scope`, read or just written.
        await write_scope(rnd, scope, write, self.limiter, by_key, group.stages(scope, by_id))
        await self._mappings(rnd, at, api, lookup, planned, scope, by_id)

    @staticmethod
    async def _write(
        api: GroupApi,
        realm: str,
        scope: ScopePlan,
        planned: Mapping[ObjectKey, Resource],
        observed: Mapping[str, Obj],
        op: ScopeOperation,
    ) -> None:
        if isinstance(op, Delete):
            await api.delete(realm, op.remote_id)
        elif isinstance(op, Release):
            # Read again right before: the body is the group as it is, less the marker.
            await api.update(realm, op.remote_id, group.release_body(await api.group(realm, op.remote_id)))
        elif isinstance(op, Create):
            scope.remote_ids[op.key] = await api.create(
                realm, _parent_id(scope, planned[op.key]), group.upsert_body(op)
            )
        else:
            assert isinstance(op, Update)  # no Disable: plan_groups plans none
            await api.update(realm, op.remote_id, group.upsert_body(op))
            parent_id = _parent_id(scope, planned[op.key])
            if (observed.get(op.remote_id) or {}).get("parentId") != parent_id:
                await api.move(realm, op.remote_id, str(op.content["name"]), parent_id)

    async def _mappings(
        self,
        rnd: Round,
        at: InRealm,
        api: GroupApi,
        lookup: Lookup,
        groups: list[Resource],
        scope: ScopePlan,
        observed: Mapping[str, Obj],
    ) -> None:
        """Each Ready group's direct role mappings made exactly the declared ones. A failure is that group's
        alone; mappings that differ from a group in step with its spec were edited by hand, and it says so."""
        written = {op.key for op in scope.plan.creates} | {op.key for op in scope.plan.updates}
        leaving = {op.key for op in scope.plan.deletes} | {r.key for r in scope.releases}
        for g in groups:
            remote = scope.remote_ids.get(g.key)
            verdict = rnd.verdicts.get(g.key)
            if remote is not None and g.key not in leaving and (verdict is None or verdict.phase != "Ready"):
                await self._revoke(rnd, at, api, lookup, g, remote, observed.get(remote) or {})
                continue
            if g.deleting or remote is None or verdict is None or verdict.phase != "Ready":
                continue
            try:
                # A group just written is read again: the listing predates the write.
                current = await api.group(at.remote, remote) if g.key in written else observed[remote]
                writes = group.plan_role_mappings(g.content, current)
                for w in writes:
                    roles, client_uuid = await self._representations(lookup, w)
                    await self.limiter.acquire(g.key.namespace)
                    await api.write_mappings(at.remote, remote, client_uuid, w.operation == "add", roles)
                    metrics.replication_write(MAPPING_KIND, w.operation)
            except AdminError as e:
                rnd.failed = True
                rnd.verdicts[g.key] = Verdict("Error", "WriteFailed", f"role mappings: {e}")
                continue
            # Not after a create or a spec change (those write the mappings as declared): a hand edit.
            if writes and (g.key not in written or g.key in scope.drift):
                message = f"restored role mappings edited in Keycloak: {', '.join(w.label for w in writes)}"
                rnd.note(g.key, Event("Normal", "DriftRepaired", message))

    async def _revoke(
        self, rnd: Round, at: InRealm, api: GroupApi, lookup: Lookup, g: Resource, remote: str, held: Obj
    ) -> None:
        """A marked group that is not Ready still answers to the token authority: a realm role it holds that
        its namespace may not give (a grant withdrawn) is removed, with a Warning; read from this round's
        listing, so a quiet round writes nothing."""
        if not held.get(group.REALM_ROLES) and not held.get(group.CLIENT_ROLES):
            return
        try:
            realm_roles = await lookup.realm_roles() if held.get(group.REALM_ROLES) else {}
            owners = await lookup.owners() if held.get(group.CLIENT_ROLES) else {}
        except AdminError as e:
            rnd.write_failed(g.key, f"role mappings: {e}")
            return
        view = ta.RealmView(at.remote, realm_roles, owners)
        for w in group.refused_held(held, authority_for(at, view)(g.key.namespace)):
            if w.client is not None and w.client not in owners:
                continue  # a client gone from the realm (since the listing) took its roles' mappings along
            try:
                roles, client_uuid = await self._representations(lookup, w)
                await self.limiter.acquire(g.key.namespace)
                await api.write_mappings(at.remote, remote, client_uuid, False, roles)
            except AdminError as e:
                rnd.write_failed(g.key, f"role mappings: {e}")
                return
            metrics.replication_write(MAPPING_KIND, w.operation)
            message = f"removed role mappings no longer granted: {w.label}"
            rnd.note(g.key, Event("Warning", "RoleMappingRevoked", message))

    @staticmethod
    async def _representations(lookup: Lookup, w: group.MappingWrite) -> tuple[list[Obj], str | None]:
        """The roles of a mapping write as Keycloak takes them (id and name), and their client's id."""
        if w.client is None:
            known, uuid = await lookup.realm_roles(), None
        else:
            uuid = await lookup.client_uuid(w.client)
            if uuid is None:
                raise AdminError(0, f"client {w.client}: not in the realm")
            known = await lookup.client_roles(uuid)
        missing = [r for r in w.roles if r not in known]
        if missing:
            raise AdminError(0, f"{w.label}: no such role: {', '.join(missing)}")
        return [{"id": known[r].get("id"), "name": r} for r in w.roles], uuid


def _parent_id(scope: ScopePlan, g: Resource) -> str | None:
    """The parent's id in Keycloak (None at the top); a parent that is not there fails the write."""
    up = group.parent_key(g)
    if up is None:
        return None
    remote = scope.remote_ids.get(up)
    if remote is None:
        raise AdminError(0, f"spec.parent: KeycloakGroup {up.namespace}/{up.name} is not in Keycloak")
    return remote
