"""Writes the realms of one server (core/replication/realm.py plans them), each login's realms planned
against the realm list that login sees: one tenant's restricted login must not hide or strip another
tenant's realms."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from keycloak_operator.core.common import formats
from keycloak_operator.core.replication import migrations, realm
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import read_marker
from keycloak_operator.core.replication.plan import Create, Delete, Update
from keycloak_operator.core.replication.resources import keep_orphans_of
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import (
    Disable,
    Release,
    Resource,
    Revocation,
    ScopeOperation,
    ScopePlan,
    Verdict,
)
from keycloak_operator.core.replication.watched import Listing, deletions_waiting
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.admins import Admins
from keycloak_operator.shell.replication.executor import write_scope

log = logging.getLogger(__name__)
Listed = Mapping[str, Mapping[str, Any]]  # the realms a login listed, by name


class RealmWriter:
    def __init__(
        self, limiter: WriteLimiter, format_in_effect: Callable[[], int | None] | None = None
    ) -> None:
        """`format_in_effect`: the stored format every live replica supports (shell/leadership.py), asked once
        per login's realms; standalone, this replica's newest."""
        self.limiter = limiter
        self.format_in_effect = format_in_effect or (lambda: formats.FORMAT_VERSION)

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
            listing.held,
        )
        listed = False
        for cred in sorted(admins.logged_in, key=lambda c: (c.namespace, c.secret, c.ca_secret or "")):
            admin = admins.by_credentials[cred]
            assert isinstance(admin, KeycloakAdmin)
            group = [r for r in realms if targets[r.key].credentials == cred]
            try:
                # Entries that are not objects are left out once, here: every reader below takes a mapping.
                observed = [o for o in await admin.realms() if isinstance(o, Mapping)]
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
            fmt = self.format_in_effect()
            by_name = {str(o.get("realm")): o for o in observed}

            async def write(
                op: ScopeOperation, scope: ScopePlan = scope, fmt: int | None = fmt, by_name: Listed = by_name
            ) -> None:
                listed = by_name.get(op.remote_id) if isinstance(op, Update | Release | Disable) else None
                await self._write(admins.admin_for(op.key), op, scope, passwords.get(op.key), fmt, listed)

            await write_scope(rnd, scope, write, self.limiter, {r.key: r for r in group})
            written = {op.key for phase in scope.phases() for op in phase}
            # No format every live replica shares: nothing is migrated (core/common/formats.py).
            if fmt is None:
                log.warning("no stored format is shared by every live replica: realms are not migrated")
                continue
            await self._migrate(rnd, admins, observed, [r for r in group if r.key not in written], fmt)
        for r in realms:  # a failed login: already its problem, nothing planned for it
            if r.problem is not None:
                rnd.verdicts.setdefault(r.key, r.problem)
        return listed

    @staticmethod
    def _unavailable(rnd: Round, group: list[Resource], message: str) -> None:
        for r in group:
            rnd.verdicts[r.key] = r.problem or Verdict("Error", "ServerUnavailable", message)
        rnd.failed = True

    async def _migrate(
        self,
        rnd: Round,
        admins: Admins,
        observed: list[dict[str, Any]],
        group: list[Resource],
        fmt: int,
    ) -> None:
        """Brings this login's owned realms up to the format in effect (core/replication/migrations.py).
        `group`: the realms not written this round (a write may have renamed or deleted one, so what was
        listed no longer describes it; it is migrated next round). One realm's failure stays on it; its
        record is unchanged, so the next round re-runs the step."""
        owned = {r.key for r in group if not r.deleting and r.problem is None}
        by_name = {str(r.get("realm")): r for r in observed}
        broken: set[str] = set()
        for w in migrations.plan_migrations(observed, owned, fmt):
            if w.realm in broken:
                continue
            marker = read_marker(by_name[w.realm].get("attributes"))
            assert marker is not None  # plan_migrations only plans for marked realms
            await self.limiter.acquire(marker.key.namespace)
            try:
                await admins.admin_for(marker.key).update_realm(w.realm, dict(w.body))
            except AdminError as e:
                broken.add(w.realm)
                rnd.write_failed(marker.key, f"migrating to stored format {w.target}: {e}")
                continue
            log.info("realm %s: stored format %d written", w.realm, w.target)

    @staticmethod
    async def _write(
        admin: KeycloakAdmin,
        op: ScopeOperation,
        scope: ScopePlan,
        smtp_password: str | None,
        fmt: int | None,
        listed: Mapping[str, Any] | None,
    ) -> None:
        """`fmt`: the stored format in effect, None without agreement (a create then carries no record); an
        update keeps the record listed, whatever the format: only a migration moves it. `listed`: the realm as
        listed, for an Update, a Release or a Disable."""
        stamp = formats.FIRST_FORMAT if fmt is None else fmt
        if isinstance(op, Delete):
            await admin.delete_realm(op.remote_id)
        elif isinstance(op, Release):
            await admin.update_realm(op.remote_id, realm.release_body(listed))
        elif isinstance(op, Disable):
            await admin.update_realm(op.remote_id, realm.disable_body(listed))
        elif isinstance(op, Create):
            await admin.create_realm(migrations.stamped(realm.create_body(op, smtp_password), stamp))
            scope.remote_ids[op.key] = realm.remote_id(op)
        else:
            assert isinstance(op, Update)
            body = realm.update_body(op, smtp_password, listed=listed)
            await admin.update_realm(op.remote_id, migrations.record_kept(body, listed))
            scope.remote_ids[op.key] = realm.remote_id(op)  # a rename moves the realm
