"""The admin logins one round holds to its server: one per set of credentials its realms name, and which of
them acts for which realm (never another namespace's login: ADR 0008)."""

from __future__ import annotations

from collections.abc import Mapping

from keycloak_operator.core.replication import realm
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.resources import Credentials, RealmTarget, acting_credentials
from keycloak_operator.core.replication.sync import Resource
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.admin_logins import Logins


class Admins:
    def __init__(self, targets: Mapping[ObjectKey, RealmTarget]) -> None:
        """`targets`: the realm resources on this round's server."""
        self.targets = targets
        self.by_credentials: dict[Credentials, KeycloakAdmin | AdminError] = {}

    async def login(self, logins: Logins, url: str) -> None:
        """One login per credentials, in the order the realms name them; one used only by realms being
        deleted may fall back on the last login that worked (admin_logins.py)."""
        for t in self.targets.values():
            if t.credentials is not None and t.credentials not in self.by_credentials:
                users = [u for u in self.targets.values() if u.credentials == t.credentials]
                only_deletes = all(u.resource.deleting for u in users)
                self.by_credentials[t.credentials] = await logins.admin(url, t.credentials, only_deletes)

    @property
    def logged_in(self) -> list[Credentials]:
        return [c for c, a in self.by_credentials.items() if isinstance(a, KeycloakAdmin)]

    @property
    def unusable(self) -> bool:
        """Some request of this round found the server unreachable, ran out its deadline or had its answer
        refused: the server counts as not reached, and backs off."""
        return any(isinstance(a, KeycloakAdmin) and a.unusable for a in self.by_credentials.values())

    def with_login_problem(self, t: RealmTarget) -> Resource:
        """The realm, with its login's failure as its problem if that login failed."""
        admin = self.by_credentials.get(t.credentials) if t.credentials else None
        if isinstance(admin, AdminError):
            return realm.with_login_problem(t.resource, admin.status, str(admin))
        return t.resource

    def admin_for(self, key: ObjectKey) -> KeycloakAdmin:
        """The login that writes for the realm `key` (an orphan's too); AdminError when that login failed
        or there is none: nothing is written for it."""
        acting = acting_credentials(key, self.targets, self.logged_in)
        found = self.by_credentials.get(acting) if acting is not None else None
        if not isinstance(found, KeycloakAdmin):  # its own login failed: nothing is written for it
            raise AdminError(0, f"no admin login may act for {key.namespace}/{key.name}")
        return found

    async def close(self) -> None:
        for a in self.by_credentials.values():
            if isinstance(a, KeycloakAdmin):
                await a.close()
