"""The admin REST calls of a client's service-account role mappings (core/replication/service_account.py
plans them), kept out of admin/keycloak.py, which holds the calls every kind uses.

Keycloak 26.7.3: a client's service-account user is GET clients/{id}/service-account-user; its direct
mappings GET users/{id}/role-mappings; a mapping is added by POSTing, and removed by DELETEing, a list of
role representations ({id, name}) to users/{id}/role-mappings/realm or .../clients/{client id}. A client
role's composites (core/replication/role_composites.py): GET, POST and DELETE (a list of roles) on
clients/{id}/roles/{name}/composites.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core.replication.service_account import MappingWrite
from keycloak_operator.shell.admin.connection import AdminConnection, AdminError


class RoleMappingAdmin:
    def __init__(self, admin: AdminConnection, realm: str) -> None:
        self.admin = admin
        self.base = f"admin/realms/{admin.segment(realm)}"

    async def service_account_user(self, client_id: str) -> str:
        """The id of the client's service-account user (Keycloak makes it with serviceAccountsEnabled)."""
        path = f"{self.base}/clients/{self.admin.segment(client_id)}/service-account-user"
        answer = await self.admin.request("GET", path)
        uid = answer.get("id") if isinstance(answer, dict) else None
        if not isinstance(uid, str) or not uid:
            raise AdminError(0, f"client {client_id}: the server returned no service-account user")
        return uid

    async def held(self, user_id: str) -> Any:
        return await self.admin.request(
            "GET", f"{self.base}/users/{self.admin.segment(user_id)}/role-mappings"
        )

    async def write(self, user_id: str, write: MappingWrite) -> None:
        path = f"{self.base}/users/{self.admin.segment(user_id)}/role-mappings/"
        path += "realm" if write.container is None else f"clients/{self.admin.segment(write.container)}"
        await self.admin.request("POST" if write.operation == "add" else "DELETE", path, write.body())

    def _composites(self, client_id: str, role: str) -> str:
        return (
            f"{self.base}/clients/{self.admin.segment(client_id)}/roles/{self.admin.segment(role)}/composites"
        )

    async def composites(self, client_id: str, role: str) -> Any:
        return await self.admin.request("GET", self._composites(client_id, role))

    async def write_composites(self, client_id: str, role: str, write: MappingWrite) -> None:
        method = "POST" if write.operation == "add" else "DELETE"
        await self.admin.request(method, self._composites(client_id, role), write.body())
