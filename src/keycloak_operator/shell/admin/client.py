"""Keycloak's client endpoints, on the admin connection (admin/connection.py): a client by its id, its
secret, and what lives inside it: its roles, protocol mappers and client scope links
(core/replication/client_parts.py plans them)."""

from __future__ import annotations

from typing import Any

from keycloak_operator.shell.admin.connection import AdminConnection, AdminError

_q = AdminConnection.segment


class ClientAdmin(AdminConnection):
    async def clients(self, realm: str) -> list[dict[str, Any]]:
        return await self._list(f"admin/realms/{_q(realm)}/clients")

    async def create_client(self, realm: str, body: dict[str, Any]) -> str:
        """The new client's id."""
        return await self._create(f"admin/realms/{_q(realm)}/clients", body)

    async def update_client(self, realm: str, client_id: str, body: dict[str, Any]) -> None:
        await self._send("PUT", f"admin/realms/{_q(realm)}/clients/{_q(client_id)}", body)

    async def delete_client(self, realm: str, client_id: str) -> None:
        await self._send("DELETE", f"admin/realms/{_q(realm)}/clients/{_q(client_id)}")

    async def client_secret(self, realm: str, client_id: str) -> str:
        answer = await self._send("GET", f"admin/realms/{_q(realm)}/clients/{_q(client_id)}/client-secret")
        value = answer.get("value") if isinstance(answer, dict) else None
        if not isinstance(value, str) or not value:
            raise AdminError(0, f"client {client_id}: the server returned no secret")
        return value

    # --- inside a client: roles, protocol mappers, client scopes (core/replication/client_parts.py) -------

    def _client(self, realm: str, client_id: str) -> str:
        return f"admin/realms/{_q(realm)}/clients/{_q(client_id)}"

    async def client(self, realm: str, client_id: str) -> dict[str, Any]:
        answer = await self._send("GET", self._client(realm, client_id))
        if not isinstance(answer, dict):
            raise AdminError(0, f"client {client_id}: expected an object")
        return answer

    async def client_roles(self, realm: str, client_id: str) -> list[dict[str, Any]]:
        return await self._list(f"{self._client(realm, client_id)}/roles", briefRepresentation="false")

    async def write_client_part(
        self, realm: str, client_id: str, part: str, operation: str, name: str, remote_id: str | None,
        body: Any,
    ) -> None:  # fmt: skip
        """One write of client_parts.PartWrite: a role by name, a mapper or a scope link by id."""
        base = self._client(realm, client_id)
        if part == "role":
            path = f"{base}/roles" if operation == "create" else f"{base}/roles/{_q(name)}"
        elif part == "mapper":
            path = f"{base}/protocol-mappers/models"
            path = path if operation == "create" else f"{path}/{_q(remote_id or '')}"
        else:  # a scope link: PUT attaches, DELETE detaches
            path = f"{base}/{part.split('-')[0]}-client-scopes/{_q(remote_id or '')}"
            await self._send("DELETE" if operation == "delete" else "PUT", path)
            return
        method = {"create": "POST", "update": "PUT", "delete": "DELETE"}[operation]
        await self._send(method, path, body)
