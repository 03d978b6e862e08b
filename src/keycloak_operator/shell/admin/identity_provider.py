"""Keycloak's identity provider endpoints, through AdminConnection.request (its deadlines, size caps,
write counting and errors), kept out of admin/keycloak.py so that each API area's calls stay with it.

An identity provider is addressed by its alias; its mappers by their id. The list answer holds each
provider's config (the client secret masked) but not its mappers, which have a list of their own.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.shell.admin.connection import AdminConnection, AdminError

_METHODS = {"create": "POST", "update": "PUT", "delete": "DELETE"}


class IdentityProviderAdmin:
    def __init__(self, admin: AdminConnection) -> None:
        self.admin = admin

    def _base(self, realm: str) -> str:
        return f"admin/realms/{self.admin.segment(realm)}/identity-provider/instances"

    def _one(self, realm: str, alias: str) -> str:
        return f"{self._base(realm)}/{self.admin.segment(alias)}"

    async def _list(self, path: str) -> list[dict[str, Any]]:
        answer = await self.admin.request("GET", path)
        if answer is None:
            return []
        if not isinstance(answer, list):
            raise AdminError(0, f"GET {path}: expected a list, got {type(answer).__name__}")
        return answer

    async def providers(self, realm: str) -> list[dict[str, Any]]:
        return await self._list(self._base(realm))

    async def get(self, realm: str, alias: str) -> dict[str, Any]:
        answer = await self.admin.request("GET", self._one(realm, alias))
        if not isinstance(answer, dict):
            raise AdminError(0, f"identity provider {alias}: expected an object")
        return answer

    async def create(self, realm: str, body: dict[str, Any]) -> str:
        """The new provider's alias (its id in every path): Keycloak answers 201 with no body."""
        await self.admin.request("POST", self._base(realm), body)
        return str(body["alias"])

    async def update(self, realm: str, alias: str, body: dict[str, Any]) -> None:
        await self.admin.request("PUT", self._one(realm, alias), body)

    async def delete(self, realm: str, alias: str) -> None:
        await self.admin.request("DELETE", self._one(realm, alias))

    async def mappers(self, realm: str, alias: str) -> list[dict[str, Any]]:
        return await self._list(f"{self._one(realm, alias)}/mappers")

    async def write_mapper(
        self, realm: str, alias: str, operation: str, mapper_id: str | None, body: Any
    ) -> None:
        """One mapper write (idp_mappers.MapperWrite)."""
        path = f"{self._one(realm, alias)}/mappers"
        if operation != "create":
            path = f"{path}/{self.admin.segment(mapper_id or '')}"
        await self.admin.request(_METHODS[operation], path, body)
