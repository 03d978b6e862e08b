"""What a round reads in one realm and its steps share: each client's roles, listed at most once per round.

The client parts (client_parts.py), the service-account view (a client's roles named by others), each
service account's composites step (service_accounts.py) and the groups' role lookup (groups.py) all need a
client's roles; each used to list them itself, so a quiet round listed every client's roles twice. The
round owns one of these per realm (context.InRealm) and drops it at its end: nothing is kept across rounds,
so a hand edit in Keycloak is seen by the next round as before. A step that writes a client's roles or their
composites calls `forget`, and the next reader lists them again: a listing is never older than the last
write this round made to what it lists.
"""

from __future__ import annotations

import asyncio
from typing import Any

from keycloak_operator.shell.keycloak_admin import KeycloakAdmin

Obj = dict[str, Any]


class RealmReads:
    def __init__(self, admin: KeycloakAdmin, realm: str) -> None:
        self._admin, self._realm = admin, realm
        self._roles: dict[str, list[Obj]] = {}
        # Steps run concurrently (fan_out.py): two asking for the same client's roles share one request.
        self._locks: dict[str, asyncio.Lock] = {}

    async def client_roles(self, client_uuid: str) -> list[Obj]:
        """The client's roles (full representations: with `composite`), as listed this round. A failed
        listing is not kept: the next caller asks again, as each caller did on its own before."""
        async with self._locks.setdefault(client_uuid, asyncio.Lock()):
            if client_uuid not in self._roles:
                self._roles[client_uuid] = await self._admin.client_roles(self._realm, client_uuid)
            return list(self._roles[client_uuid])

    def forget(self, client_uuid: str) -> None:
        """The client's roles or their composites were written: the next reader lists them again."""
        self._roles.pop(client_uuid, None)
