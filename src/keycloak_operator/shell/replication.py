"""One replication round for one Keycloak server: read everything fresh, plan (pure), write, report.

Order: realms (deletes before upserts, ADR 0005), then each owned realm's roles and clients, then client
Secrets, statuses and finalizers. Resources are LISTed from the API server at the start of every round, not
taken from a cache: a resource missing from a stale cache would look deleted, and its object would go. For
the same reason a watched namespace whose LIST fails (deleted, and its RoleBinding with it) is left out of
the round, never read as empty, and the other namespaces go on (core/replication/watched.py).
Nothing is written, to Keycloak or to Kubernetes, when nothing changed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from keycloak_operator.core import merge_patch, names
from keycloak_operator.core.reconcile import Event
from keycloak_operator.core.replication import Create, Delete, ObjectKey, Update, content_hash
from keycloak_operator.core.replication import client as client_kind
from keycloak_operator.core.replication import realm as realm_kind
from keycloak_operator.core.replication import roles as role_kind
from keycloak_operator.core.replication.fairness import round_robin
from keycloak_operator.core.replication.resources import (
    Credentials,
    RealmTarget,
    acting_credentials,
    client_resource,
    forbidden_since,
    realm_target,
)
from keycloak_operator.core.replication.servers import DEFAULT_POLICY, ServerPolicy, backoff_key
from keycloak_operator.core.replication.status import render
from keycloak_operator.core.replication.sync import (
    Disable,
    Release,
    Resource,
    Revocation,
    ScopePlan,
    Verdict,
    settle,
    waits_on_unreadable,
)
from keycloak_operator.core.replication.watched import (
    Listing,
    Standing,
    Unlisted,
    deletions_waiting,
    releasable_without_realm,
    standing,
)
from keycloak_operator.shell import events, metrics
from keycloak_operator.shell.admin_logins import Login, Logins
from keycloak_operator.shell.keycloak_admin import AdminError, KeycloakAdmin
from keycloak_operator.shell.kube import KEYCLOAKS, NAMESPACES, SECRETS, ApiError, Kube
from keycloak_operator.shell.kube import Resource as ApiResource
from keycloak_operator.shell.ratelimit import WriteLimiter

log = logging.getLogger(__name__)

REALMS = ApiResource(names.GROUP, names.VERSION, names.REALM_PLURAL)
CLIENTS = ApiResource(names.GROUP, names.VERSION, names.CLIENT_PLURAL)
RETRY_S = 10.0
# A server that could not be reached at all (no login, no realm list) is retried later each time, up to
# this: a dead or trickling server a tenant names costs a worker for one request deadline per period.
MAX_RETRY_S = 300.0
CONCURRENCY = 4  # Keycloak admin writes in flight per round
KUBE_CONCURRENCY = 8  # Kubernetes writes in flight per round (finalizers, statuses, events)

Obj = dict[str, Any]


@dataclass
class Round:
    """What one round learnt and did, for the status and event pass at its end."""

    objects: dict[ObjectKey, Obj] = field(default_factory=dict)
    verdicts: dict[ObjectKey, Verdict] = field(default_factory=dict)
    remote_ids: dict[ObjectKey, str] = field(default_factory=dict)
    hashes: dict[ObjectKey, str] = field(default_factory=dict)
    finalizable: set[ObjectKey] = field(default_factory=set)
    events: dict[ObjectKey, list[Event]] = field(default_factory=dict)
    failed: bool = False

    def note(self, key: ObjectKey, event: Event) -> None:
        self.events.setdefault(key, []).append(event)


class Replicator:
    def __init__(
        self,
        kube: Kube,
        namespaces: Sequence[str] | None,
        limiter: WriteLimiter,
        admin_factory: Callable[[Login], KeycloakAdmin] | None = None,
        *,
        policy: ServerPolicy = DEFAULT_POLICY,
        revocation_grace: timedelta = timedelta(0),
    ) -> None:
        self.kube = kube
        self.namespaces = list(namespaces) if namespaces else None
        self.limiter = limiter
        self.policy = policy
        self.revocation_grace = revocation_grace
        self.admin_writes = 0
        self._unreachable: dict[str, int] = {}  # server host:port -> rounds in a row that could not reach it
        self._not_before: dict[str, float] = {}  # server host:port -> monotonic time a next round may start
        self._unlisted: dict[str, Standing] = {}  # watched namespaces the last round could not list
        self.logins = Logins(kube, self._count, admin_factory)

    def _count(self) -> None:
        self.admin_writes += 1

    async def _read(self) -> tuple[list[Obj], list[Obj], list[Obj], Listing]:
        """Realms, clients and (if a realm names one) Keycloaks, LISTed fresh; with a namespace list, from
        each namespace that answers. One that does not is left out of this round whole (watched.py), never
        read as empty, and the others go on."""
        if self.namespaces is None:
            realms, clients = await self.kube.list(REALMS, None), await self.kube.list(CLIENTS, None)
            keycloaks = await self.kube.list(KEYCLOAKS, None) if _names_keycloaks(realms) else []
            return realms, clients, keycloaks, Listing(None)
        read: dict[str, list[list[Obj]]] = {}
        errors: dict[str, ApiError] = {}
        for ns in self.namespaces:
            try:
                read[ns] = [await self.kube.list(REALMS, ns), await self.kube.list(CLIENTS, ns)]
            except ApiError as e:
                errors[ns] = e
        if _names_keycloaks(o for found in read.values() for o in found[0]):
            for ns in list(read):
                try:
                    read[ns].append(await self.kube.list(KEYCLOAKS, ns))
                except ApiError as e:
                    errors[ns] = e
                    del read[ns]
        unlisted = {ns: Unlisted(ns, await self._standing(ns), str(e)) for ns, e in errors.items()}
        self._note_unlisted(unlisted)
        per_ns = list(read.values())
        return (
            [o for found in per_ns for o in found[0]],
            [o for found in per_ns for o in found[1]],
            [o for found in per_ns if len(found) > 2 for o in found[2]],
            Listing(frozenset(self.namespaces), unlisted),
        )

    async def _standing(self, namespace: str) -> Standing:
        """Whether a namespace that could not be listed is gone: read by a LIST with a field selector (the
        namespace-restricted install may list and watch namespaces, as kopf does; not get them)."""
        try:
            found = await self.kube.list(NAMESPACES, None, field_selector=f"metadata.name={namespace}")
        except ApiError as e:
            log.debug("namespace %s: cannot read it either: %s", namespace, e)
            return standing(None)
        return standing(found)

    def _note_unlisted(self, unlisted: Mapping[str, Unlisted]) -> None:
        """Logged when a namespace's standing changes (not every round: rounds run per server, every
        resync), and counted in a gauge while it lasts."""
        assert self.namespaces is not None
        for ns in self.namespaces:
            now = unlisted.get(ns)
            before = self._unlisted.get(ns)
            if now is None and before is not None:
                log.info("watched namespace %s can be read again; its realms and clients replicate again", ns)
                del self._unlisted[ns]
            elif now is not None and now.standing != before:
                self._unlisted[ns] = now.standing
                if now.standing == "gone":
                    log.info(
                        "watched namespace %s is gone or being deleted and cannot be listed (%s); "
                        "replicating the other namespaces without it, nothing of it is deleted from Keycloak",
                        ns,
                        now.error,
                    )
                else:
                    log.warning(
                        "watched namespace %s cannot be listed (%s); replicating the other namespaces "
                        "without it, its objects in Keycloak are left as they are, retried each round",
                        ns,
                        now.error,
                    )
        metrics.unlisted_namespaces(
            {st: sum(1 for v in self._unlisted.values() if v == st) for st in ("gone", "unreadable")}
        )

    async def sync(self, url: str) -> float | None:
        """One round for the server at `url`; the delay before the next one if something failed."""
        if time.monotonic() < self._not_before.get(backoff_key(url), 0.0):
            return None  # unreachable lately: the failed round asked for its retry; resyncs do not hurry it
        realm_list, client_list, keycloak_list, listing = await self._read()
        realm_objs = [{**o, "apiVersion": names.API_VERSION, "kind": names.REALM_KIND} for o in realm_list]
        client_objs = [{**o, "apiVersion": names.API_VERSION, "kind": names.CLIENT_KIND} for o in client_list]
        keycloaks = {(k["metadata"]["namespace"], k["metadata"]["name"]): k for k in keycloak_list}
        blind = listing.unreadable
        targets = {
            t.resource.key: t for t in (realm_target(o, keycloaks, self.policy, blind) for o in realm_objs)
        }
        mine = {k: t for k, t in targets.items() if t.server is not None and t.server.url == url}
        unresolved = {k: t for k, t in targets.items() if t.server is None}
        rnd = Round(failed=listing.failed)
        rnd.objects.update({t.resource.key: o for t, o in zip(targets.values(), realm_objs, strict=True)})
        clients = [client_resource(o, targets, blind) for o in client_objs]
        rnd.objects.update({c.key: o for c, o in zip(clients, client_objs, strict=True)})
        in_scope_clients = [c for c in clients if c.parent in mine]
        for c in clients:  # clients of a realm resource that does not exist: reported by every round
            if c.parent not in targets and c.problem is not None:
                rnd.verdicts[c.key] = c.problem
                if releasable_without_realm(c, blind):
                    rnd.finalizable.add(c.key)
        await self._ensure_finalizers(
            [rnd.objects[k] for k in mine], [rnd.objects[c.key] for c in in_scope_clients]
        )

        reached = True
        admins: dict[Credentials, KeycloakAdmin | AdminError] = {}
        try:
            for t in mine.values():
                if t.credentials is not None and t.credentials not in admins:
                    users = [u for u in mine.values() if u.credentials == t.credentials]
                    only_deletes = all(u.resource.deleting for u in users)
                    admins[t.credentials] = await self.logins.admin(url, t.credentials, only_deletes)
            realms = [self._with_login_problem(t, admins) for t in mine.values()]
            if not any(isinstance(a, KeycloakAdmin) for a in admins.values()):
                for r in realms:
                    rnd.verdicts[r.key] = r.problem or Verdict("Pending", "NoCredentials")
                rnd.failed = bool(realms)
                reached = not realms
            else:
                reached = await self._realms_and_clients(
                    rnd, mine, realms, in_scope_clients, admins, targets, listing
                )
            reached = reached and not any(
                isinstance(a, KeycloakAdmin) and a.timed_out for a in admins.values()
            )
        finally:
            for a in admins.values():
                if isinstance(a, KeycloakAdmin):
                    await a.close()
        for key, t in unresolved.items():
            if t.resource.problem is not None:
                rnd.verdicts.setdefault(key, t.resource.problem)
            if realm_kind.releasable_without_server(t.resource):
                rnd.finalizable.add(key)
        for c in clients:  # clients of a realm that names no server the operator may reach
            realm_problem = unresolved[c.parent].resource.problem if c.parent in unresolved else None
            if realm_problem is None:
                continue
            where = f"realm {c.parent.namespace}/{c.parent.name}" if c.parent else "realm"
            rnd.verdicts[c.key] = c.problem or Verdict(
                "Pending", "RealmNotReady", f"{where}: {realm_problem.message}"
            )
            if releasable_without_realm(c, blind) and not waits_on_unreadable(realm_problem):
                rnd.finalizable.add(c.key)  # no server to hold its object: nothing left to delete
        await self._report(rnd)
        return self._retry_after(url, rnd.failed, reached)

    def _retry_after(self, url: str, failed: bool, reached: bool) -> float | None:
        """RETRY_S after a round with failures. An external server that could not be reached at all (no
        login, no realm list, or a request that ran out its deadline) waits twice as long after each such
        round in a row, up to MAX_RETRY_S, and so does every URL on its host and port: a tenant cannot
        multiply its slow server by spelling paths. The Keycloaks this operator runs are retried at
        RETRY_S: a restart or a rollout of theirs is not a reason to wait minutes."""
        host = backoff_key(url)
        own = names.is_keycloak_url(url, self.policy.cluster_domain)
        if reached or own:
            self._unreachable.pop(host, None)
            self._not_before.pop(host, None)
            return RETRY_S if failed or not reached else None
        streak = self._unreachable.get(host, 0) + 1
        self._unreachable[host] = streak
        delay = min(RETRY_S * 2 ** (streak - 1), MAX_RETRY_S)
        self._not_before[host] = time.monotonic() + delay - 1.0  # the retry itself must not be skipped
        return delay

    # --- logins ------------------------------------------------------------------------------------------

    @staticmethod
    def _with_login_problem(
        t: RealmTarget, admins: dict[Credentials, KeycloakAdmin | AdminError]
    ) -> Resource:
        admin = admins.get(t.credentials) if t.credentials else None
        if isinstance(admin, AdminError) and t.resource.problem is None:
            message = str(admin)
            if t.resource.deleting and admin.status == 404:
                message += (
                    f"; the realm stays in Keycloak and this resource keeps the finalizer"
                    f" {names.REPLICATION_FINALIZER} until the Secret is back (or the finalizer is removed)"
                )
            return replace(t.resource, problem=Verdict("Error", "AdminLoginFailed", message))
        return t.resource

    # --- the round ------------------------------------------------------------------------------------------

    async def _realms_and_clients(
        self,
        rnd: Round,
        targets: dict[ObjectKey, RealmTarget],
        realms: list[Resource],
        clients: list[Resource],
        admins: dict[Credentials, KeycloakAdmin | AdminError],
        every_target: dict[ObjectKey, RealmTarget],
        listing: Listing,
    ) -> bool:
        """Each login's realms, planned against the realm list that login sees (one tenant's restricted
        login must not hide or strip another tenant's realms); then each realm's roles, clients and
        Secrets. False when no login could list the realms. A failure inside one realm is reported on that
        realm and its clients, and the others go on."""
        logged_in = [c for c, a in admins.items() if isinstance(a, KeycloakAdmin)]

        def admin_for(key: ObjectKey) -> KeycloakAdmin:
            acting = acting_credentials(key, targets, logged_in)
            found = admins.get(acting) if acting is not None else None
            if not isinstance(found, KeycloakAdmin):  # its own login failed: nothing is written for it
                raise AdminError(0, f"no admin login may act for {key.namespace}/{key.name}")
            return found

        # Markers of a namespace that could not be listed are never diffed: its resources were not seen,
        # which does not make its objects orphans (watched.py).
        watched = listing.observed
        waiting = deletions_waiting(
            ((r, targets[r.key].client_namespaces) for r in realms), listing.unreadable
        )
        revocation = Revocation(datetime.now(UTC), self.revocation_grace)
        listed = False
        for cred in sorted(logged_in, key=lambda c: (c.namespace, c.secret, c.ca_secret or "")):
            admin = admins[cred]
            assert isinstance(admin, KeycloakAdmin)
            group = [r for r in realms if targets[r.key].credentials == cred]
            try:
                observed = await admin.realms()
            except AdminError as e:
                for r in group:
                    rnd.verdicts[r.key] = r.problem or Verdict("Error", "ServerUnavailable", str(e))
                rnd.failed = True
                continue
            listed = True
            elsewhere = frozenset(every_target) - {r.key for r in group}
            try:
                scope = realm_kind.plan_realms(
                    group,
                    clients,
                    observed,
                    watched,
                    declared_elsewhere=elsewhere,
                    revocation=revocation,
                    waiting=waiting,
                )
            except ValueError as e:  # what this server listed cannot be planned: its realms wait
                for r in group:
                    rnd.verdicts[r.key] = r.problem or Verdict("Error", "ServerUnavailable", str(e))
                rnd.failed = True
                continue
            _keep_orphans_of(scope, cred, targets, logged_in)

            async def realm_write(op: Any, scope: ScopePlan = scope) -> None:
                await self._realm_write(admin_for(op.key), op, scope)

            failed = await self._execute(scope, realm_write, rnd)
            settle(scope, failed)
            self._collect(rnd, scope, {r.key: r for r in group})
        for r in realms:  # a failed login: already its problem, nothing planned for it
            if r.problem is not None:
                rnd.verdicts.setdefault(r.key, r.problem)

        for r in realms:
            mine = [c for c in clients if c.parent == r.key]
            try:
                await self._realm_contents(rnd, r, mine, admin_for, watched, revocation)
            except (AdminError, ApiError) as e:
                self._realm_failed(rnd, r, mine, str(e))
            except Exception as e:  # a bug, or an answer of a shape nobody expected: this realm only
                log.exception("realm %s/%s: round step failed", r.key.namespace, r.key.name)
                self._realm_failed(rnd, r, mine, f"internal error: {type(e).__name__}")
        return listed

    async def _realm_contents(
        self,
        rnd: Round,
        realm: Resource,
        clients: list[Resource],
        admin_for: Callable[[ObjectKey], KeycloakAdmin],
        watched: AbstractSet[str] | None,
        revocation: Revocation,
    ) -> None:
        """One realm's roles, clients and client Secrets, once the realm itself is settled."""
        verdict = rnd.verdicts.get(realm.key)
        remote = rnd.remote_ids.get(realm.key)
        if verdict is None or verdict.phase not in ("Ready", "Deleting") or remote is None:
            why = verdict.message if verdict and verdict.message else "not in Keycloak"
            reachable = verdict is None or verdict.phase != "Error"
            for c in clients:
                if c.deleting and remote is None and reachable:
                    rnd.finalizable.add(c.key)  # its realm is not in Keycloak: nothing left to delete
                rnd.verdicts[c.key] = c.problem or Verdict(
                    "Pending", "RealmNotReady", f"realm {realm.key.namespace}/{realm.key.name}: {why}"
                )
            return
        admin = admin_for(realm.key)
        await self._roles(rnd, admin, realm, remote)
        client_scope = client_kind.plan_clients(
            clients, await admin.clients(remote), watched, revocation=revocation
        )
        client_by_key = {c.key: c for c in clients}
        failed = await self._execute(
            client_scope, functools.partial(self._client_write, admin, remote, client_scope), rnd
        )
        settle(client_scope, failed)
        self._collect(rnd, client_scope, client_by_key)
        await self._client_secrets(rnd, admin, remote, clients, client_scope)

    @staticmethod
    def _realm_failed(rnd: Round, realm: Resource, clients: list[Resource], message: str) -> None:
        rnd.failed = True
        rnd.verdicts[realm.key] = Verdict("Error", "RoundFailed", message)
        for c in clients:
            rnd.verdicts[c.key] = c.problem or Verdict(
                "Pending", "RealmNotReady", f"realm {realm.key.namespace}/{realm.key.name}: {message}"
            )

    async def _execute(
        self, scope: ScopePlan, write: Callable[[Any], Awaitable[None]], rnd: Round
    ) -> dict[ObjectKey, str]:
        """Removals, then upserts; within each phase namespaces take turns; one failure stays its own."""
        failed: dict[ObjectKey, str] = {}
        plan = scope.plan
        phases: list[Iterable[Any]] = [
            [*plan.deletes, *plan.duplicates, *scope.releases, *scope.disables],
            [*plan.creates, *plan.updates],
        ]
        gate = asyncio.Semaphore(CONCURRENCY)
        for ops in phases:
            ordered = round_robin(ops, _namespace_of)

            async def one(op: Any) -> None:
                async with gate:
                    await self.limiter.acquire(op.key.namespace)
                    try:
                        await write(op)
                        metrics.replication_write(op.key.kind, _operation(op))
                    except AdminError as e:
                        failed[op.key] = str(e)
                        rnd.failed = True
                        rnd.note(op.key, Event("Warning", "WriteFailed", str(e)))

            await asyncio.gather(*(one(op) for op in ordered))
        return failed

    @staticmethod
    def _collect(rnd: Round, scope: ScopePlan, resources: dict[ObjectKey, Resource]) -> None:
        """Fold a settled scope into the round, and say what was written, on each resource."""
        rnd.verdicts.update(scope.verdicts)
        # Only ids of this scope's own resources: a server can hold markers naming anything at all.
        rnd.remote_ids.update({k: v for k, v in scope.remote_ids.items() if k in resources})
        for key, r in resources.items():
            if scope.verdicts.get(key, Verdict("Pending", "")).phase == "Ready":
                rnd.hashes[key] = content_hash(r.content)
        rnd.finalizable.update(scope.finalizable)
        ok = {k for k, v in scope.verdicts.items() if v.phase != "Error"}
        for op in scope.plan.deletes:
            if op.key in resources and op.key in ok | set(scope.finalizable):
                rnd.note(op.key, Event("Normal", "Deleted", f"deleted from Keycloak ({op.remote_id})"))
        for release in scope.releases:
            if release.key in scope.finalizable:
                rnd.note(release.key, Event("Normal", "Released", "left in Keycloak, no longer managed"))
        for disable in scope.disables:
            if disable.key in ok:
                message = (
                    "disabled in Keycloak: this namespace is no longer allowed (revocation grace passed)"
                )
                rnd.note(disable.key, Event("Warning", "Revoked", message))
        for create in scope.plan.creates:
            if create.key in ok:
                rnd.note(create.key, Event("Normal", "Created", "created in Keycloak"))
        for update in scope.plan.updates:
            if update.key not in ok:
                continue
            drift = scope.drift.get(update.key)
            if drift:
                message = f"restored fields edited in Keycloak: {', '.join(drift)}"
                rnd.note(update.key, Event("Normal", "DriftRepaired", message))
            else:
                rnd.note(update.key, Event("Normal", "Updated", "updated in Keycloak"))

    # --- writes ---------------------------------------------------------------------------------------------

    async def _realm_write(self, admin: KeycloakAdmin, op: Any, scope: ScopePlan) -> None:
        if isinstance(op, Delete):
            await admin.delete_realm(op.remote_id)
        elif isinstance(op, Release):
            await admin.update_realm(op.remote_id, realm_kind.release_body())
        elif isinstance(op, Disable):
            await admin.update_realm(op.remote_id, realm_kind.disable_body())
        elif isinstance(op, Create):
            await admin.create_realm(realm_kind.create_body(op))
            scope.remote_ids[op.key] = realm_kind.remote_id(op)
        else:
            assert isinstance(op, Update)
            await admin.update_realm(op.remote_id, realm_kind.update_body(op))
            scope.remote_ids[op.key] = realm_kind.remote_id(op)  # a rename moves the realm

    async def _roles(self, rnd: Round, admin: KeycloakAdmin, realm: Resource, remote: str) -> None:
        if realm.deleting:
            return
        owner = realm_kind.owner_text(realm.key)
        plan = role_kind.plan_roles(role_kind.declared_roles(realm.content), await admin.roles(remote), owner)
        conflict = role_kind.conflict_event(plan)
        if conflict is not None:
            rnd.note(realm.key, conflict)
        try:
            for write in role_kind.role_writes(plan, owner):
                await self.limiter.acquire(realm.key.namespace)
                if write.operation == "create":
                    assert write.body is not None
                    await admin.create_role(remote, write.body)
                elif write.operation == "update":
                    assert write.body is not None
                    await admin.update_role(remote, write.name, write.body)
                else:
                    await admin.delete_role(remote, write.name)
                metrics.replication_write(role_kind.KIND, write.operation)
        except AdminError as e:
            rnd.failed = True
            rnd.verdicts[realm.key] = Verdict("Error", "WriteFailed", f"realm roles: {e}")
            return
        synced = role_kind.synced_event(plan)
        if synced is not None:
            rnd.note(realm.key, synced)

    async def _client_write(self, admin: KeycloakAdmin, realm: str, scope: ScopePlan, op: Any) -> None:
        if isinstance(op, Delete):
            await admin.delete_client(realm, op.remote_id)
        elif isinstance(op, Release):
            # Read again right before: the body is the client as it is, less the marker.
            current = next((c for c in await admin.clients(realm) if c.get("id") == op.remote_id), None)
            if current is not None:
                await admin.update_client(realm, op.remote_id, client_kind.release_body(current))
        elif isinstance(op, Disable):
            await admin.update_client(realm, op.remote_id, client_kind.disable_body(op.current))
        elif isinstance(op, Create):
            scope.remote_ids[op.key] = await admin.create_client(realm, client_kind.upsert_body(op))
        else:
            assert isinstance(op, Update)
            await admin.update_client(realm, op.remote_id, client_kind.upsert_body(op))

    # --- client secrets -------------------------------------------------------------------------------------

    async def _client_secrets(
        self, rnd: Round, admin: KeycloakAdmin, realm: str, clients: list[Resource], scope: ScopePlan
    ) -> None:
        """A confidential client's secret goes to a Secret in its namespace, owned by the client resource.
        Read from Keycloak only when the Secret is missing, names another client, or the client was just
        written: a quiet round GETs each such Secret by name and writes nothing. (By name, not a LIST per
        namespace: the operator's role then needs no `list` on Secrets, which would hand it every Secret of
        every watched namespace in one call.)"""
        written = {op.key for op in scope.plan.creates} | {op.key for op in scope.plan.updates}
        for c in clients:
            obj = rnd.objects[c.key]
            secret_name = client_kind.client_secret_name(obj)
            remote = scope.remote_ids.get(c.key)
            if secret_name is None or not client_kind.secret_due(c, remote, rnd.verdicts.get(c.key)):
                continue
            assert remote is not None  # secret_due
            existing = await self.kube.get(SECRETS, c.key.namespace, secret_name)
            step = client_kind.secret_step(obj, secret_name, existing, remote, c.key in written)
            if isinstance(step, Verdict):
                rnd.verdicts[c.key] = step
                continue
            if step == "keep":
                continue
            try:
                value = await admin.client_secret(realm, remote)
            except AdminError as e:
                rnd.failed = True
                rnd.verdicts[c.key] = Verdict("Error", "SecretReadFailed", str(e))
                continue
            body = client_kind.secret_body(obj, secret_name, c.natural_key, value, remote)
            if existing is not None and existing.get("data") == body["data"]:
                continue
            try:
                await self.kube.apply(body)
            except ApiError as e:  # a terminating namespace, say: this client's problem, not the round's
                rnd.failed = True
                rnd.verdicts[c.key] = Verdict("Error", "SecretWriteFailed", str(e))
                continue
            rnd.note(c.key, client_kind.secret_written(secret_name))

    # --- Kubernetes side ------------------------------------------------------------------------------------

    async def _ensure_finalizers(self, *groups: list[Obj]) -> None:
        async def one(obj: Obj) -> None:
            meta = obj["metadata"]
            if meta.get("deletionTimestamp") or names.REPLICATION_FINALIZER in (meta.get("finalizers") or []):
                return
            res = REALMS if obj["kind"] == names.REALM_KIND else CLIENTS
            patch = {
                "metadata": {
                    "finalizers": [*(meta.get("finalizers") or []), names.REPLICATION_FINALIZER],
                    "resourceVersion": meta["resourceVersion"],
                }
            }
            try:
                updated = await self.kube.merge_patch(res, meta["namespace"], meta["name"], patch)
            except ApiError as e:  # changed or gone meanwhile, or its namespace going: this one only
                log.info(
                    "%s %s/%s: finalizer not added yet: %s", obj["kind"], meta["namespace"], meta["name"], e
                )
                return
            meta.update(updated["metadata"])

        await _bounded(one(obj) for group in groups for obj in group)

    async def _report(self, rnd: Round) -> None:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        await _bounded(self._report_one(rnd, key, obj, now) for key, obj in rnd.objects.items())

    async def _report_one(self, rnd: Round, key: ObjectKey, obj: Obj, now: str) -> None:
        """Events, then either the finalizer's release or the status (patched only when it changed)."""
        res = REALMS if key.kind == names.REALM_KIND else CLIENTS
        meta = obj["metadata"]
        for event in rnd.events.get(key, []):
            await events.post(self.kube, obj, event)
        if key in rnd.finalizable and meta.get("deletionTimestamp"):
            kept = [f for f in meta.get("finalizers") or [] if f != names.REPLICATION_FINALIZER]
            patch = {"metadata": {"finalizers": kept, "resourceVersion": meta["resourceVersion"]}}
            try:
                await self.kube.merge_patch(res, key.namespace, key.name, patch)
            except ApiError as e:
                if e.status not in (404, 409):  # gone, or changed meanwhile: the next round looks again
                    self._report_failed(rnd, key, e)
            return
        verdict = rnd.verdicts.get(key)
        if verdict is None:
            return  # not in this round's server
        metrics.resource_result(key.kind, verdict.phase != "Error")
        previous = obj.get("status") or {}
        if verdict.phase == "Forbidden":  # the schedule, whatever path of the round decided Forbidden
            since = forbidden_since(obj)
            schedule = Revocation(datetime.now(UTC), self.revocation_grace).message(since)
            verdict = replace(verdict, message=verdict.message + schedule)
        status = render(
            previous,
            verdict,
            generation=int(meta.get("generation") or 0),
            keycloak_id=rnd.remote_ids.get(key, ""),
            content_hash=rnd.hashes.get(key, ""),
            now=now,
            revocation=self.revocation_grace > timedelta(0),
        )
        patch = merge_patch.merge_patch(previous, status)
        if not patch:
            return
        if verdict.phase != (previous.get("phase") or "") and verdict.phase in ("Conflict", "Forbidden"):
            if verdict.phase == "Conflict":
                metrics.replication_conflict(key.kind)
            await events.post(self.kube, obj, Event("Warning", verdict.reason, verdict.message))
        try:
            await self.kube.patch_status(res, key.namespace, key.name, patch)  # False: deleted meanwhile
        except ApiError as e:
            self._report_failed(rnd, key, e)

    @staticmethod
    def _report_failed(rnd: Round, key: ObjectKey, error: ApiError) -> None:
        """One resource's Kubernetes write failed: logged, retried by the next round, the others go on."""
        log.warning("%s %s/%s: %s", key.kind, key.namespace, key.name, error)
        rnd.failed = True


def _names_keycloaks(realms: Iterable[Obj]) -> bool:
    """Whether any realm targets a Keycloak this operator runs (only then are Keycloaks listed)."""
    return any(((o.get("spec") or {}).get("server") or {}).get("keycloak") for o in realms)


async def _bounded(calls: Iterable[Awaitable[None]], limit: int = KUBE_CONCURRENCY) -> None:
    """Runs Kubernetes writes for many resources side by side, a few at a time: one round touches every
    resource of a server on its first sync, and one at a time that is a minute per thousand."""
    gate = asyncio.Semaphore(limit)

    async def one(call: Awaitable[None]) -> None:
        async with gate:
            await call

    await asyncio.gather(*(one(c) for c in calls))


def _operation(op: Delete | Create | Update | Release | Disable) -> str:
    return type(op).__name__.lower()


def _namespace_of(op: Delete | Create | Update | Release | Disable) -> str:
    return op.key.namespace


def _keep_orphans_of(
    scope: ScopePlan, cred: Credentials, targets: dict[ObjectKey, RealmTarget], logged_in: list[Credentials]
) -> None:
    """Each orphan is deleted by exactly one login: the one `acting_credentials` names (the server's own
    admin, or a login of the orphan's namespace). One no login may delete (an external server's realm of a
    namespace with no login in this round) stays where it is: deleting it with another namespace's login
    would be borrowing."""
    keep = [
        d
        for d in scope.plan.deletes
        if d.key in targets or acting_credentials(d.key, targets, logged_in) == cred
    ]
    scope.plan = replace(scope.plan, deletes=keep)
