"""Keycloak's client scope endpoints, on the admin connection (admin/connection.py): the realm's client
scopes, one by its id, and its protocol mappers (core/replication/client_scope.py plans them)."""

from __future__ import annotations

from typing import Any

from keycloak_operator.shell.admin.connection import AdminConnection, AdminError

_q = AdminConnection.segment


class ClientScopeAdmin(AdminConnection):
    async def client_scopes(self, realm: str) -> list[dict[str, Any]]:
        return await self._list(f"admin/realms/{_q(realm)}/client-scopes")

    def _client_scope(self, realm: str, scope_id: str) -> str:
        return f"admin/realms/{_q(realm)}/client-scopes/{_q(scope_id)}"

    async def client_scope(self, realm: str, scope_id: str) -> dict[str, Any]:
        answer = await self._send("GET", self._client_scope(realm, scope_id))
        if not isinstance(answer, dict):
            raise AdminError(0, f"client scope {scope_id}: expected an object")
        return answer

    async def create_client_scope(self, realm: str, body: dict[str, Any]) -> str:
        """The new client scope's id."""
        return await self._create(f"admin/realms/{_q(realm)}/client-scopes", body)

    async def update_client_scope(self, realm: str, scope_id: str, body: dict[str, Any]) -> None:
        await self._send("PUT", self._client_scope(realm, scope_id), body)

    async def delete_client_scope(self, realm: str, scope_id: str) -> None:
        await self._send("DELETE", self._client_scope(realm, scope_id))

    async def write_scope_mapper(
        self, realm: str, scope_id: str, operation: str, mapper_id: str | None, body: Any
    ) -> None:
        """One mapper write of a client scope (client_parts.PartWrite of part "mapper")."""
        path = f"{self._client_scope(realm, scope_id)}/protocol-mappers/models"
        if operation != "create":
            path = f"{path}/{_q(mapper_id or '')}"
        method = {"create": "POST", "update": "PUT", "delete": "DELETE"}[operation]
        await self._send(method, path, body)
