"""One replication round for one Keycloak server: read everything fresh, plan (pure), write, report.

Order: realms (deletes before upserts, ADR 0005), then, inside each realm the round may write to, the steps
of kinds.py in their order (its roles, client scopes, clients with their Secrets, groups, and so on), then
statuses and finalizers. Each kind is planned in core/replication/ and written by its writer; the round
only orders and runs them, the same way for every kind (ADR 0030).
Resources are LISTed at the start of every round (listing.py says why). Nothing is written, to Keycloak or
to Kubernetes, when nothing changed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from keycloak_operator.core.replication.identity import ObjectKey
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
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.admin_logins import Login, Logins
from keycloak_operator.shell.kube import ApiError, Kube
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.admins import Admins
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.kinds import STEPS, InsideRealm, Tools
from keycloak_operator.shell.replication.listing import Reader
from keycloak_operator.shell.replication.realm_reads import RealmReads
from keycloak_operator.shell.replication.realms import RealmWriter
from keycloak_operator.shell.replication.reporting import Reporter
from keycloak_operator.shell.replication.smtp_secrets import with_smtp_passwords
from keycloak_operator.shell.settings import DEFAULT_CONCURRENCY, DEFAULT_ROUND_BUDGET_S

log = logging.getLogger(__name__)


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
        tools = Tools(kube, limiter, concurrency)
        self.inside_realm: tuple[InsideRealm, ...] = tuple(step.writer(tools) for step in STEPS)

    def _count(self) -> None:
        self.admin_writes += 1

    async def sync(self, url: str) -> float | None:
        """One round for the server at `url`; the delay before the next one if something failed."""
        if self.backoff.waiting(url, self.clock()):
            return None  # unreachable lately: the failed round asked for its retry; resyncs do not hurry it
        read = await self.reader.read()
        realm_objs = read.of(names.REALM_KIND)
        keycloaks = {(k["metadata"]["namespace"], k["metadata"]["name"]): k for k in read.keycloaks}
        blind = read.listing.held
        targets = {
            t.resource.key: t for t in (realm_target(o, keycloaks, self.policy, blind) for o in realm_objs)
        }
        mine = {k: t for k, t in targets.items() if t.server is not None and t.server.url == url}
        unresolved = {k: t for k, t in targets.items() if t.server is None}
        rnd = Round(failed=read.listing.failed)
        rnd.objects.update({t.resource.key: o for t, o in zip(targets.values(), realm_objs, strict=True)})
        # Everything declared inside a realm, of every kind; each writer takes its own (context.InRealm).
        children: list[Resource] = []
        for reads in (step.reads for step in STEPS if step.reads is not None):
            for obj in read.of(reads.kind.kind):
                child = reads.resource(obj, targets, blind, self.policy)
                children.append(child)
                rnd.objects[child.key] = obj
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
