"""What a round reads in one realm and its steps share: each client's roles, listed at most once per round.

The client parts (client_parts.py), the service-account view (a client's roles named by others), each
service account's composites step (service_accounts.py) and the groups' role lookup (groups.py) all need a
client's roles; each used to list them itself, so a quiet round listed every client's roles twice. The
round owns one of these per realm (context.InRealm) and drops it at its end: nothing is kept across rounds,
so a hand edit in Keycloak is seen by the next round as before. A step that writes a client's roles calls
`forget`, and the next reader lists them again: a listing is never older than the last write this round
made to the roles, even one that landed while the listing was in flight. (A write to a role's composites
changes only its `composite` flag, which no one reads after the composites step: groups.py maps roles by
name and id. So that write forgets nothing.)
"""

from __future__ import annotations

import asyncio
from typing import Any

from keycloak_operator.shell.admin.keycloak import KeycloakAdmin

Obj = dict[str, Any]


class RealmReads:
    def __init__(self, admin: KeycloakAdmin, realm: str) -> None:
        self._admin, self._realm = admin, realm
        self._roles: dict[str, list[Obj]] = {}
        # Steps run concurrently (fan_out.py): two asking for the same client's roles share one request.
        self._locks: dict[str, asyncio.Lock] = {}
        # Bumped by each `forget`: a listing asked for before a write and answered after it is not kept.
        self._writes: dict[str, int] = {}

    async def client_roles(self, client_uuid: str) -> list[Obj]:
        """The client's roles (full representations: with `composite`), as listed this round. A failed
        listing is not kept: the next caller asks again, as each caller did on its own before."""
        async with self._locks.setdefault(client_uuid, asyncio.Lock()):
            if client_uuid in self._roles:
                return list(self._roles[client_uuid])
            before = self._writes.get(client_uuid, 0)
            listed = await self._admin.client_roles(self._realm, client_uuid)
            if self._writes.get(client_uuid, 0) == before:
                self._roles[client_uuid] = listed
            return list(listed)

    def forget(self, client_uuid: str) -> None:
        """The client's roles were written: the next reader lists them again, and a listing in flight is
        not kept."""
        self._writes[client_uuid] = self._writes.get(client_uuid, 0) + 1
        self._roles.pop(client_uuid, None)
