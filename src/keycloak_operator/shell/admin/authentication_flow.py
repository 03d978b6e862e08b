"""Keycloak's authentication flow endpoints, through AdminConnection.request (its deadlines, size caps,
write counting and errors), kept out of admin/keycloak.py so that each API area's calls stay with it.

A flow is read, updated and deleted by its id, but its executions are listed and added through its alias
(a subflow's too); an execution is deleted, and given a config, by its id.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.shell.admin.connection import AdminConnection, AdminError


class AuthenticationFlowAdmin:
    def __init__(self, admin: AdminConnection) -> None:
        self.admin = admin

    def _base(self, realm: str) -> str:
        return f"admin/realms/{self.admin.segment(realm)}/authentication"

    def _flow(self, realm: str, flow_id: str) -> str:
        return f"{self._base(realm)}/flows/{self.admin.segment(flow_id)}"

    def _executions(self, realm: str, alias: str) -> str:
        return f"{self._base(realm)}/flows/{self.admin.segment(alias)}/executions"

    async def _get(self, path: str) -> Any:
        return await self.admin.request("GET", path)

    async def flows(self, realm: str) -> list[dict[str, Any]]:
        """The realm's top-level flows (built-ins included), each without its subflows."""
        answer = await self._get(f"{self._base(realm)}/flows")
        if not isinstance(answer, list):
            raise AdminError(0, f"authentication flows of {realm}: expected a list")
        return answer

    async def create_flow(self, realm: str, body: dict[str, Any]) -> str:
        """The new flow's id: the one the body names (Keycloak keeps it)."""
        await self.admin.request("POST", f"{self._base(realm)}/flows", body)
        return str(body["id"])

    async def update_flow(self, realm: str, flow_id: str, body: dict[str, Any]) -> None:
        await self.admin.request("PUT", self._flow(realm, flow_id), body)

    async def delete_flow(self, realm: str, flow_id: str) -> None:
        await self.admin.request("DELETE", self._flow(realm, flow_id))

    async def executions(self, realm: str, alias: str) -> list[dict[str, Any]]:
        """Every execution under the flow, depth-first, with its `level` and `index`."""
        answer = await self._get(self._executions(realm, alias))
        if not isinstance(answer, list):
            raise AdminError(0, f"executions of flow {alias}: expected a list")
        return [e for e in answer if isinstance(e, dict)]

    async def config(self, realm: str, config_id: str) -> dict[str, Any]:
        answer = await self._get(f"{self._base(realm)}/config/{self.admin.segment(config_id)}")
        if not isinstance(answer, dict):
            raise AdminError(0, f"authenticator config {config_id}: expected an object")
        return answer

    async def update_config(self, realm: str, config_id: str, body: dict[str, Any]) -> None:
        """Keycloak 26.7.3 sets the alias and the values a PUT names (read from its jar: no uniqueness check
        on the alias there, so the caller renames only to an alias it holds)."""
        await self.admin.request("PUT", f"{self._base(realm)}/config/{self.admin.segment(config_id)}", body)

    async def add_authenticator(self, realm: str, parent: str, provider: str) -> None:
        await self.admin.request(
            "POST", f"{self._executions(realm, parent)}/execution", {"provider": provider}
        )

    async def add_subflow(self, realm: str, parent: str, step: dict[str, Any]) -> None:
        body = {
            "alias": step["subflow"],
            "type": step.get("providerId", "basic-flow"),
            "provider": "registration-page-form",  # read by Keycloak for a form-flow only
            "description": step.get("description", ""),
        }
        await self.admin.request("POST", f"{self._executions(realm, parent)}/flow", body)

    async def set_requirement(self, realm: str, alias: str, execution: dict[str, Any]) -> None:
        await self.admin.request("PUT", self._executions(realm, alias), execution)

    async def add_config(self, realm: str, execution_id: str, body: dict[str, Any]) -> None:
        path = f"{self._base(realm)}/executions/{self.admin.segment(execution_id)}/config"
        await self.admin.request("POST", path, body)

    async def realm_bindings(self, realm: str) -> dict[str, Any]:
        """The realm as Keycloak returns it: its flow bindings (browserFlow, ...) by alias."""
        answer = await self._get(f"admin/realms/{self.admin.segment(realm)}")
        if not isinstance(answer, dict):
            raise AdminError(0, f"realm {realm}: expected an object")
        return answer

    async def update_realm(self, realm: str, body: dict[str, Any]) -> None:
        """A realm PUT of the bindings. Keycloak changes the fields the body holds, and resets the CIBA and
        PAR settings the body's attributes do not name: callers send the attributes back
        (core/replication/realm.py keeping_attributes)."""
        await self.admin.request("PUT", f"admin/realms/{self.admin.segment(realm)}", body)

    async def delete_execution(self, realm: str, execution_id: str) -> None:
        await self.admin.request(
            "DELETE", f"{self._base(realm)}/executions/{self.admin.segment(execution_id)}"
        )
