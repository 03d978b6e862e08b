"""Writes a realm's roles, a sub-object of the realm today (core/replication/roles.py plans them)."""

from __future__ import annotations

from keycloak_operator.core.replication import roles
from keycloak_operator.core.replication.realm import owner_text
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import Verdict
from keycloak_operator.shell import metrics
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.context import InRealm


class RoleWriter:
    def __init__(self, limiter: WriteLimiter) -> None:
        self.limiter = limiter

    async def sync(self, rnd: Round, at: InRealm) -> None:
        """One at a time, in the plan's order; the first refused write ends the realm's roles this round,
        and the realm says so."""
        realm = at.realm
        if realm.deleting:
            return
        owner = owner_text(realm.key)
        plan = roles.plan_roles(roles.declared_roles(realm.content), await at.admin.roles(at.remote), owner)
        conflict = roles.conflict_event(plan)
        if conflict is not None:
            rnd.note(realm.key, conflict)
        try:
            for write in roles.role_writes(plan, owner):
                await self.limiter.acquire(realm.key.namespace)
                if write.operation == "create":
                    assert write.body is not None
                    await at.admin.create_role(at.remote, write.body)
                elif write.operation == "update":
                    assert write.body is not None
                    await at.admin.update_role(at.remote, write.name, write.body)
                else:
                    await at.admin.delete_role(at.remote, write.name)
                metrics.replication_write(roles.KIND, write.operation)
        except AdminError as e:
            rnd.failed = True
            rnd.verdicts[realm.key] = Verdict("Error", "WriteFailed", f"realm roles: {e}")
            return
        synced = roles.synced_event(plan)
        if synced is not None:
            rnd.note(realm.key, synced)
