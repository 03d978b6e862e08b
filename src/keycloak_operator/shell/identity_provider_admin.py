"""Keycloak's identity provider endpoints, over a KeycloakAdmin's connection: its deadlines, size caps, write
counting and errors (keycloak_admin.py), kept out of that module so that each kind's calls stay with it.

An identity provider is addressed by its alias; its mappers by their id. The list answer holds each
provider's config (the client secret masked) but not its mappers, which have a list of their own.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.shell.keycloak_admin import AdminError, KeycloakAdmin, _q


class IdentityProviderApi:
    def __init__(self, admin: KeycloakAdmin) -> None:
        # The admin's request helpers are shared on purpose: one guarded path for every call (ADR 0008).
        self.admin = admin

    def _base(self, realm: str) -> str:
        return f"admin/realms/{_q(realm)}/identity-provider/instances"

    async def providers(self, realm: str) -> list[dict[str, Any]]:
        return await self.admin._list(self._base(realm))

    async def get(self, realm: str, alias: str) -> dict[str, Any]:
        answer = await self.admin._send("GET", f"{self._base(realm)}/{_q(alias)}")
        if not isinstance(answer, dict):
            raise AdminError(0, f"identity provider {alias}: expected an object")
        return answer

    async def create(self, realm: str, body: dict[str, Any]) -> str:
        """The new provider's alias (its id in every path)."""
        await self.admin._create(self._base(realm), body)
        return str(body["alias"])

    async def update(self, realm: str, alias: str, body: dict[str, Any]) -> None:
        await self.admin._send("PUT", f"{self._base(realm)}/{_q(alias)}", body)

    async def delete(self, realm: str, alias: str) -> None:
        await self.admin._send("DELETE", f"{self._base(realm)}/{_q(alias)}")

    async def mappers(self, realm: str, alias: str) -> list[dict[str, Any]]:
        return await self.admin._list(f"{self._base(realm)}/{_q(alias)}/mappers")

    async def write_mapper(
        self, realm: str, alias: str, operation: str, mapper_id: str | None, body: Any
    ) -> None:
        """One mapper write (identity_provider.MapperWrite)."""
        path = f"{self._base(realm)}/{_q(alias)}/mappers"
        if operation != "create":
            path = f"{path}/{_q(mapper_id or '')}"
        method = {"create": "POST", "update": "PUT", "delete": "DELETE"}[operation]
        await self.admin._send(method, path, body)
