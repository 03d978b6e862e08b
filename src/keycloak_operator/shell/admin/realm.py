"""Keycloak's realm endpoints and a realm's roles, on the admin connection (admin/connection.py).
A realm is addressed by its name; a realm role by its name within the realm."""

from __future__ import annotations

from typing import Any

from keycloak_operator.shell.admin.connection import AdminConnection

_q = AdminConnection.segment


class RealmAdmin(AdminConnection):
    async def realms(self) -> list[dict[str, Any]]:
        return await self._list("admin/realms")

    async def create_realm(self, body: dict[str, Any]) -> str:
        await self._send("POST", "admin/realms", body)
        return str(body["realm"])

    async def update_realm(self, realm: str, body: dict[str, Any]) -> None:
        await self._send("PUT", f"admin/realms/{_q(realm)}", body)

    async def delete_realm(self, realm: str) -> None:
        await self._send("DELETE", f"admin/realms/{_q(realm)}")

    # --- realm roles ----------------------------------------------------------------------------------------

    async def roles(self, realm: str) -> list[dict[str, Any]]:
        return await self._list(f"admin/realms/{_q(realm)}/roles", briefRepresentation="false")

    async def create_role(self, realm: str, body: dict[str, Any]) -> None:
        await self._send("POST", f"admin/realms/{_q(realm)}/roles", body)

    async def update_role(self, realm: str, name: str, body: dict[str, Any]) -> None:
        await self._send("PUT", f"admin/realms/{_q(realm)}/roles/{_q(name)}", body)

    async def delete_role(self, realm: str, name: str) -> None:
        await self._send("DELETE", f"admin/realms/{_q(realm)}/roles/{_q(name)}")
