"""Writes what a realm gives every user (core/replication/realm_defaults.py plans it): its required actions,
default roles and default groups. Runs after the groups' writer, so a default group declared in the same
round has its id. Nothing is read for a part the realm does not declare. A failure is the realm's (its
children go on); the three parts are independent, so one's problem does not hold the others back."""

from __future__ import annotations

from typing import Any

from keycloak_operator.core.replication import default_groups as dg
from keycloak_operator.core.replication import realm_defaults as rd
from keycloak_operator.core.replication import token_authority as ta
from keycloak_operator.core.replication import user_profile
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import Verdict
from keycloak_operator.shell import metrics
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.token_reads import authority_for

KIND = "RealmDefaults"  # the metrics' kind for these writes


class RealmDefaultsWriter:
    def __init__(self, limiter: WriteLimiter) -> None:
        self.limiter = limiter

    async def sync(self, rnd: Round, at: InRealm) -> None:
        realm = at.realm
        content = realm.content
        if realm.deleting or not any(part in content for part in rd.PARTS):
            return
        base = f"admin/realms/{at.admin.segment(at.remote)}"
        written: list[str] = []
        problems: list[Verdict] = []
        steps = (
            (rd.REQUIRED_ACTIONS, self._required_actions),
            (rd.DEFAULT_ROLES, self._default_roles),
            (rd.DEFAULT_GROUPS, self._default_groups),
            (user_profile.USER_PROFILE, self._user_profile),
        )
        for part, step in steps:
            if part not in content:
                continue
            try:
                problem = await step(rnd, at, base, content[part], written)
            except AdminError as e:
                rnd.failed = True
                problem = Verdict("Error", "WriteFailed", f"spec.{part}: {e}")
            if problem is not None:
                problems.append(problem)
        current = rnd.verdicts.get(realm.key)
        if problems and (current is None or current.phase == "Ready"):  # an earlier writer's Error stays
            # An Error (a refused write) outranks a Pending (a wait) on the realm's status.
            rnd.verdicts[realm.key] = next((p for p in problems if p.phase == "Error"), problems[0])
        if written:
            reasons = [e.reason for e in rnd.events.get(realm.key, [])]
            rnd.note(realm.key, rd.written_event(written, reasons, realm.was_pending))

    async def _write(self, at: InRealm, method: str, path: str, body: Any = None) -> None:
        await self.limiter.acquire(at.realm.key.namespace)
        await at.admin.request(method, path, body)
        metrics.replication_write(KIND, method.lower())

    async def _required_actions(
        self, rnd: Round, at: InRealm, base: str, declared: Any, written: list[str]
    ) -> Verdict | None:
        observed = await at.admin.get_list(f"{base}/authentication/required-actions")
        plan = rd.plan_required_actions(declared, observed)
        for body in plan.puts:
            path = f"{base}/authentication/required-actions/{at.admin.segment(body['alias'])}"
            await self._write(at, "PUT", path, body)
            written.append(rd.action_label(body))
        return plan.problem

    async def _default_roles(
        self, rnd: Round, at: InRealm, base: str, declared: Any, written: list[str]
    ) -> Verdict | None:
        realm = await at.admin.request("GET", base)
        default_role = realm.get("defaultRole") if isinstance(realm, dict) else None
        role_id = default_role.get("id") if isinstance(default_role, dict) else None
        if not isinstance(role_id, str):
            raise AdminError(0, f"GET {base}: the realm has no defaultRole")
        composites = f"{base}/roles-by-id/{at.admin.segment(role_id)}/composites"
        held = await at.admin.get_list(composites)
        view = await _role_view(at, declared)
        includes, truncated = await _includes(at.admin, base, view)
        plan = rd.plan_default_roles(declared, held, view, includes, truncated)
        for change in plan.changes:
            await self._write(at, "POST" if change.operation == "add" else "DELETE", composites, change.roles)
            sign = "+" if change.operation == "add" else "-"
            written.extend(f"defaultRoles[{sign}{label}]" for label in change.labels)
        return plan.problem

    async def _default_groups(
        self, rnd: Round, at: InRealm, base: str, declared: Any, written: list[str]
    ) -> Verdict | None:
        authority = await _every_user_authority(at, declared)
        groups = dg.namespace_groups(authority, at.children, rnd.verdicts, rnd.remote_ids, declared)
        observed = await at.admin.get_list(f"{base}/default-groups")
        plan = dg.plan_default_groups(declared, groups, observed)
        for gid in plan.remove:
            await self._write(at, "DELETE", f"{base}/default-groups/{at.admin.segment(gid)}")
        for gid in plan.add:
            await self._write(at, "PUT", f"{base}/default-groups/{at.admin.segment(gid)}")
        written.extend(f"defaultGroups[{label}]" for label in plan.labels)
        return plan.problem

    async def _user_profile(
        self, rnd: Round, at: InRealm, base: str, declared: Any, written: list[str]
    ) -> Verdict | None:
        """One document: read, and PUT whole (merged) only when a managed part differs."""
        observed = await at.admin.request("GET", f"{base}/users/profile")
        if not isinstance(observed, dict):
            raise AdminError(0, f"GET {base}/users/profile: not a JSON object")
        changed = user_profile.drift(declared, observed)
        if changed:
            await self._write(at, "PUT", f"{base}/users/profile", user_profile.merged(declared, observed))
            written.extend(changed)
        return None


async def _role_view(at: InRealm, declared: Any) -> rd.RoleView:
    """The realm as the token authority judges the declared default roles for the realm's own namespace,
    read only as far as they are declared: every realm role; when client roles are declared, every client
    with its owner, and the roles of the declared ones (through the round's shared listing,
    realm_reads.py)."""
    admin, realm = at.admin, at.remote
    realm_roles = {
        str(r["name"]): r
        for r in await admin.roles(realm)
        if isinstance(r, dict) and isinstance(r.get("name"), str) and isinstance(r.get("id"), str)
    }
    owners: dict[str, tuple[str, str | None]] = {}
    pristine: frozenset[str] = frozenset()
    client_roles: dict[str, dict[str, str]] = {}
    composite: set[str] = set()
    wanted = set(declared["clients"])
    if wanted:
        listed_clients = await admin.clients(realm)
        owners, pristine = ta.client_owners(listed_clients), ta.unmarked_clients(listed_clients)
        for cid in sorted(wanted & owners.keys()):
            listed = [
                r
                for r in await at.reads.client_roles(owners[cid][0])
                if isinstance(r, dict) and isinstance(r.get("id"), str) and isinstance(r.get("name"), str)
            ]
            client_roles[cid] = {str(r["name"]): str(r["id"]) for r in listed}
            composite.update(str(r["id"]) for r in listed if r.get("composite") is True)
    view = ta.RealmView(realm, realm_roles, owners, pristine=pristine)
    authority = authority_for(at, view)(at.realm.key.namespace)
    return rd.RoleView(authority, client_roles, frozenset(composite))


async def _every_user_authority(at: InRealm, declared: Any) -> ta.Authority:
    """The realm's own namespace's authority for its default groups, with the realm's roles and clients
    read only when a declared group (or one above it) maps a role."""
    view = ta.RealmView(at.remote, {}, {})
    authority = authority_for(at, view)(at.realm.key.namespace)
    if dg.maps_roles(declared, dg.own_groups(authority, at.children, deleting=True)):
        listed = await at.admin.clients(at.remote)
        roles = {
            str(r["name"]): r
            for r in await at.admin.roles(at.remote)
            if isinstance(r, dict) and isinstance(r.get("name"), str)
        }
        view = ta.RealmView(at.remote, roles, ta.client_owners(listed), pristine=ta.unmarked_clients(listed))
    return authority_for(at, view)(at.realm.key.namespace)


async def _includes(admin: KeycloakAdmin, base: str, view: rd.RoleView) -> tuple[dict[str, list[Any]], bool]:
    """What the declared composite client roles include, and below them every composite in reach, read
    one role at a time up to COMPOSITES_READ_MAX (True when that bound stopped the reading). A role out of
    reach is not read further: it already refuses the default roles (core: composite_problem)."""
    includes: dict[str, list[Any]] = {}
    stack = sorted(view.composite)
    while stack:
        role_id = stack.pop()
        if role_id in includes:
            continue
        if len(includes) >= rd.COMPOSITES_READ_MAX:
            return includes, True
        inner = await admin.get_list(f"{base}/roles-by-id/{admin.segment(role_id)}/composites")
        includes[role_id] = inner
        stack.extend(
            str(r["id"])
            for r in inner
            if rd.role_in_reach(r, view) and r.get("composite") is True and isinstance(r.get("id"), str)
        )
    return includes, False
