"""Writes the realms of one server (core/replication/realm.py plans them), each login's realms planned
against the realm list that login sees: one tenant's restricted login must not hide or strip another
tenant's realms."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from keycloak_operator.core.replication import realm
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.plan import Create, Delete, Update
from keycloak_operator.core.replication.resources import keep_orphans_of
from keycloak_operator.core.replication.round import Round, collect
from keycloak_operator.core.replication.sync import (
    Disable,
    Release,
    Resource,
    Revocation,
    ScopeOperation,
    ScopePlan,
    Verdict,
    settle,
)
from keycloak_operator.core.replication.watched import Listing, deletions_waiting
from keycloak_operator.shell.keycloak_admin import AdminError, KeycloakAdmin
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.admins import Admins
from keycloak_operator.shell.replication.executor import execute


class RealmWriter:
    def __init__(self, limiter: WriteLimiter) -> None:
        self.limiter = limiter

    async def sync(
        self,
        rnd: Round,
        admins: Admins,
        realms: list[Resource],
        clients: list[Resource],
        declared: AbstractSet[ObjectKey],
        listing: Listing,
        revocation: Revocation,
        smtp_passwords: Mapping[ObjectKey, str] | None = None,
    ) -> bool:
        """`realms`: this server's, with their login problems; `clients`: theirs (a realm with clients still
        declared waits to be deleted); `declared`: every realm resource, whatever its server (its object here
        is never an orphan); `smtp_passwords`: read this round, put into the realm's own writes only. False
        when no login could list the realms."""
        passwords = smtp_passwords or {}
        targets = admins.targets
        waiting = deletions_waiting(
            ((r, targets[r.key].allow_lists()) for r in realms),
            listing.unreadable,
        )
        listed = False
        for cred in sorted(admins.logged_in, key=lambda c: (c.namespace, c.secret, c.ca_secret or "")):
            admin = admins.by_credentials[cred]
            assert isinstance(admin, KeycloakAdmin)
            group = [r for r in realms if targets[r.key].credentials == cred]
            try:
                observed = await admin.realms()
            except AdminError as e:
                self._unavailable(rnd, group, str(e))
                continue
            listed = True
            elsewhere = frozenset(declared) - {r.key for r in group}
            try:
                scope = realm.plan_realms(
                    group,
                    clients,
                    observed,
                    # Markers of a namespace that could not be listed are never diffed: its resources were
                    # not seen, which does not make its objects orphans (watched.py).
                    listing.observed,
                    declared_elsewhere=elsewhere,
                    revocation=revocation,
                    waiting=waiting,
                )
            except ValueError as e:  # what this server listed cannot be planned: its realms wait
                self._unavailable(rnd, group, str(e))
                continue
            keep_orphans_of(scope, cred, targets, admins.logged_in)

            by_name = {str(o.get("realm")): o for o in observed if isinstance(o, Mapping)}

            async def write(
                op: ScopeOperation, scope: ScopePlan = scope, by_name: Mapping[str, Any] = by_name
            ) -> None:
                listed = by_name.get(op.remote_id) if isinstance(op, Update) else None
                await self._write(admins.admin_for(op.key), op, scope, passwords.get(op.key), listed)

            failed = await execute(scope, write, self.limiter, rnd)
            settle(scope, failed)
            collect(rnd, scope, {r.key: r for r in group})
        for r in realms:  # a failed login: already its problem, nothing planned for it
            if r.problem is not None:
                rnd.verdicts.setdefault(r.key, r.problem)
        return listed

    @staticmethod
    def _unavailable(rnd: Round, group: list[Resource], message: str) -> None:
        for r in group:
            rnd.verdicts[r.key] = r.problem or Verdict("Error", "ServerUnavailable", message)
        rnd.failed = True

    @staticmethod
    async def _write(
        admin: KeycloakAdmin,
        op: ScopeOperation,
        scope: ScopePlan,
        smtp_password: str | None,
        listed: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(op, Delete):
            await admin.delete_realm(op.remote_id)
        elif isinstance(op, Release):
            await admin.update_realm(op.remote_id, realm.release_body())
        elif isinstance(op, Disable):
            await admin.update_realm(op.remote_id, realm.disable_body())
        elif isinstance(op, Create):
            await admin.create_realm(realm.create_body(op, smtp_password))
            scope.remote_ids[op.key] = realm.remote_id(op)
        else:
            assert isinstance(op, Update)
            await admin.update_realm(op.remote_id, realm.update_body(op, smtp_password, listed))
            scope.remote_ids[op.key] = realm.remote_id(op)  # a rename moves the realm
