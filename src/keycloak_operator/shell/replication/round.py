"""One replication round for one Keycloak server: read everything fresh, plan (pure), write, report.

Order: realms (deletes before upserts, ADR 0005), then, inside each realm the round may write to, its roles,
its client scopes, its clients (with their Secrets) and its groups, then statuses and finalizers. Each kind
is planned in core/replication/ and written by its writer here; the round only orders and runs them.
Resources are LISTed at the start of every round (listing.py says why). Nothing is written, to Keycloak or
to Kubernetes, when nothing changed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Protocol

from keycloak_operator.core.replication.authentication_flow import flow_resource
from keycloak_operator.core.replication.client_scope import scope_resource
from keycloak_operator.core.replication.group import group_resource
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.identity_provider import idp_resource
from keycloak_operator.core.replication.in_realm import client_resource
from keycloak_operator.core.replication.namespace_cap import DEFAULT_CAP
from keycloak_operator.core.replication.resources import RealmTarget, realm_target
from keycloak_operator.core.replication.retry import Backoff
from keycloak_operator.core.replication.round import (
    Round,
    no_login,
    out_of_budget,
    realm_failed,
    settled_realm,
    without_realm,
    without_server,
)
from keycloak_operator.core.replication.servers import DEFAULT_POLICY, ServerPolicy
from keycloak_operator.core.replication.sync import Resource, Revocation
from keycloak_operator.core.replication.watched import Listing
from keycloak_operator.kernel import names
from keycloak_operator.shell.admin_connection import AdminError
from keycloak_operator.shell.admin_logins import Login, Logins
from keycloak_operator.shell.keycloak_admin import KeycloakAdmin
from keycloak_operator.shell.kube import ApiError, Kube
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.admins import Admins
from keycloak_operator.shell.replication.authentication_flows import AuthenticationFlowWriter
from keycloak_operator.shell.replication.client_scopes import ClientScopeWriter
from keycloak_operator.shell.replication.clients import ClientWriter
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.groups import GroupWriter
from keycloak_operator.shell.replication.identity_providers import IdentityProviderWriter
from keycloak_operator.shell.replication.listing import Reader
from keycloak_operator.shell.replication.realm_defaults import RealmDefaultsWriter
from keycloak_operator.shell.replication.realm_reads import RealmReads
from keycloak_operator.shell.replication.realms import RealmWriter
from keycloak_operator.shell.replication.reporting import Reporter
from keycloak_operator.shell.replication.roles import RoleWriter
from keycloak_operator.shell.replication.smtp_secrets import with_smtp_passwords
from keycloak_operator.shell.settings import DEFAULT_CONCURRENCY, DEFAULT_ROUND_BUDGET_S

log = logging.getLogger(__name__)


class InsideRealm(Protocol):
    """A writer of what lives inside a realm (its roles, client scopes, clients), run once it is settled."""

    async def sync(self, rnd: Round, at: InRealm) -> None: ...


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
        clock: Callable[[], float] = time.monotonic,
        concurrency: int = DEFAULT_CONCURRENCY,
        format_in_effect: Callable[[], int | None] | None = None,
        round_budget: float = DEFAULT_ROUND_BUDGET_S,
        namespace_cap: int = DEFAULT_CAP,
    ) -> None:
        self.kube = kube
        self.round_budget = round_budget
        self.policy = policy
        self.revocation_grace = revocation_grace
        self.admin_writes = 0
        self.logins = Logins(kube, self._count, admin_factory)
        self.reader = Reader(kube, namespaces, namespace_cap)
        self.reporter = Reporter(kube)
        self.backoff = Backoff(policy.cluster_domain)
        self.clock = clock
        self.realms = RealmWriter(limiter, format_in_effect)
        # In this order inside each realm: roles, client scopes, clients (which may attach those scopes),
        # groups (which may map those clients' roles), what the realm gives every user (which may name those
        # roles and groups), identity providers (whose mappers may name roles), then authentication flows.
        self.inside_realm: tuple[InsideRealm, ...] = (
            RoleWriter(limiter),
            ClientScopeWriter(limiter),
            ClientWriter(kube, limiter, concurrency),
            GroupWriter(limiter),
            RealmDefaultsWriter(limiter),
            IdentityProviderWriter(kube, limiter),
            AuthenticationFlowWriter(limiter),
        )

    def _count(self) -> None:
        self.admin_writes += 1

    async def sync(self, url: str) -> float | None:
        """One round for the server at `url`; the delay before the next one if something failed."""
        if self.backoff.waiting(url, self.clock()):
            return None  # unreachable lately: the failed round asked for its retry; resyncs do not hurry it
        read = await self.reader.read()
        realm_objs = [{**o, "apiVersion": names.API_VERSION, "kind": names.REALM_KIND} for o in read.realms]
        client_objs = [
            {**o, "apiVersion": names.API_VERSION, "kind": names.CLIENT_KIND} for o in read.clients
        ]
        keycloaks = {(k["metadata"]["namespace"], k["metadata"]["name"]): k for k in read.keycloaks}
        blind = read.listing.held
        targets = {
            t.resource.key: t for t in (realm_target(o, keycloaks, self.policy, blind) for o in realm_objs)
        }
        mine = {k: t for k, t in targets.items() if t.server is not None and t.server.url == url}
        unresolved = {k: t for k, t in targets.items() if t.server is None}
        rnd = Round(failed=read.listing.failed)
        rnd.objects.update({t.resource.key: o for t, o in zip(targets.values(), realm_objs, strict=True)})
        scope_objs = [
            {**o, "apiVersion": names.API_VERSION, "kind": names.CLIENT_SCOPE_KIND}
            for o in read.client_scopes
        ]
        group_objs = [{**o, "apiVersion": names.API_VERSION, "kind": names.GROUP_KIND} for o in read.groups]
        idp_objs = [
            {**o, "apiVersion": names.API_VERSION, "kind": names.IDENTITY_PROVIDER_KIND}
            for o in read.identity_providers
        ]
        flow_objs = [
            {**o, "apiVersion": names.API_VERSION, "kind": names.AUTHENTICATION_FLOW_KIND} for o in read.flows
        ]
        # Everything declared inside a realm, of every kind; each writer takes its own (context.InRealm).
        children = [
            *(
                client_resource(o, targets, blind, loopback_http=self.policy.idp_loopback_http)
                for o in client_objs
            ),
            *(scope_resource(o, targets, blind) for o in scope_objs),
            *(group_resource(o, targets, blind) for o in group_objs),
            *(idp_resource(o, targets, blind, loopback_http=self.policy.idp_loopback_http) for o in idp_objs),
            *(flow_resource(o, targets, blind) for o in flow_objs),
        ]
        inside_objs = [*client_objs, *scope_objs, *group_objs, *idp_objs, *flow_objs]
        rnd.objects.update({c.key: o for c, o in zip(children, inside_objs, strict=True)})
        in_scope = [c for c in children if c.parent in mine]
        without_realm(rnd, children, targets.keys(), blind)  # reported by every round
        await self.reporter.ensure_finalizers(
            [*(rnd.objects[k] for k in mine), *(rnd.objects[c.key] for c in in_scope)]
        )

        admins = Admins(mine)
        budget = asyncio.timeout(self.round_budget)
        try:
            async with budget:
                reached = await self._server(rnd, admins, url, in_scope, targets, read.listing)
        except TimeoutError:
            if not budget.expired():
                raise  # some other timeout inside, not the budget: the work queue retries the round
            why = (
                f"{url}: the round ran out its budget of {self.round_budget:g} s (KCOP_ROUND_BUDGET_SECONDS)"
            )
            log.warning("%s", why)
            out_of_budget(rnd, [t.resource for t in mine.values()], in_scope, why)
            reached = False
        finally:
            await admins.close()
        without_server(rnd, unresolved, children, blind)
        await self.reporter.report(rnd, self.revocation_grace, url)
        return self.backoff.after(url, failed=rnd.failed, reached=reached, now=self.clock())

    async def _server(
        self,
        rnd: Round,
        admins: Admins,
        url: str,
        in_scope: list[Resource],
        targets: dict[ObjectKey, RealmTarget],
        listing: Listing,
    ) -> bool:
        """Everything the round asks of the server, within its budget. False when the server counts as not
        reached: no login, no realm list, or an answer it could not use."""
        await admins.login(self.logins, url)
        realms = [admins.with_login_problem(t) for t in admins.targets.values()]
        if not admins.logged_in:
            return no_login(rnd, realms)
        realms, passwords = await with_smtp_passwords(self.kube, realms, rnd.objects)
        reached = await self._realms(rnd, admins, realms, in_scope, targets, listing, passwords)
        return reached and not admins.unusable

    async def _realms(
        self,
        rnd: Round,
        admins: Admins,
        realms: list[Resource],
        children: list[Resource],
        every_target: dict[ObjectKey, RealmTarget],
        listing: Listing,
        smtp_passwords: Mapping[ObjectKey, str],
    ) -> bool:
        """The server's realms, then what lives in each. False when no login could list the realms. A
        failure inside one realm is reported on that realm and on what is declared in it; the others go
        on."""
        revocation = Revocation(datetime.now(UTC), self.revocation_grace)
        listed = await self.realms.sync(
            rnd, admins, realms, children, every_target.keys(), listing, revocation, smtp_passwords
        )
        for realm in realms:
            inside = [c for c in children if c.parent == realm.key]
            try:
                await self._inside(rnd, admins, realm, inside, listing, revocation)
            except (AdminError, ApiError) as e:
                realm_failed(rnd, realm, inside, str(e))
            except Exception as e:  # a bug, or an answer of a shape nobody expected: this realm only
                log.exception("realm %s/%s: round step failed", realm.key.namespace, realm.key.name)
                realm_failed(rnd, realm, inside, f"internal error: {type(e).__name__}")
        return listed

    async def _inside(
        self,
        rnd: Round,
        admins: Admins,
        realm: Resource,
        children: list[Resource],
        listing: Listing,
        revocation: Revocation,
    ) -> None:
        """One realm's contents, once the realm itself is settled."""
        remote = settled_realm(rnd, realm, children)
        if remote is None:
            return
        target = admins.targets.get(realm.key)
        grants = target.grants if target is not None else ()
        admin = admins.admin_for(realm.key)
        reads = RealmReads(admin, remote)  # this round's, for this realm: dropped when the round ends
        at = InRealm(admin, realm, remote, children, listing.observed, revocation, reads, grants)
        for writer in self.inside_realm:
            await writer.sync(rnd, at)
