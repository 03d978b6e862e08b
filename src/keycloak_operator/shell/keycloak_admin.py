"""The Keycloak admin REST API, through python-keycloak's authenticated async connection.

python-keycloak handles the token (password grant against `master`, refresh, re-login on 401); its
`KeycloakAdmin` methods, though, take the realm from mutable state on the connection, which concurrent
rounds over many realms cannot share safely. So this layer passes the realm in every path and uses the
connection's raw calls (ADR 0008). Every write is counted, so tests and metrics can prove a quiet resync.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from keycloak import KeycloakOpenIDConnection
from keycloak.exceptions import KeycloakError


class AdminError(Exception):
    """A request Keycloak refused or could not answer; the message never holds credentials."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _q(part: str) -> str:
    return quote(part, safe="")


class KeycloakAdmin:
    def __init__(self, url: str, username: str, password: str, on_write: Callable[[], None] | None = None):
        self.url = url
        self._conn = KeycloakOpenIDConnection(
            server_url=url.rstrip("/") + "/",
            username=username,
            password=password,
            realm_name="master",
            user_realm_name="master",
            client_id="admin-cli",
            timeout=30,
        )
        self._on_write = on_write

    async def login(self) -> None:
        """Fails early, with a clear error, on a wrong password or an unreachable server."""
        try:
            await self._conn.a_get_token()
        except KeycloakError as e:
            code = int(e.response_code or 0)
            raise AdminError(code, f"{self.url}: admin login failed ({code or 'unreachable'})") from None

    async def close(self) -> None:
        await self._conn.aclose()

    async def _send(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        call = {
            "GET": self._conn.a_raw_get,
            "POST": self._conn.a_raw_post,
            "PUT": self._conn.a_raw_put,
            "DELETE": self._conn.a_raw_delete,
        }[method]
        args: list[Any] = [path]
        if method in ("POST", "PUT"):
            args.append(json.dumps(body))
        if method != "GET" and self._on_write is not None:
            self._on_write()
        try:
            response = await call(*args, **params)
        except KeycloakError as e:
            raise AdminError(0, f"{method} {path}: {e}") from e
        if response.status_code >= 400:
            detail = response.text[:300]
            raise AdminError(response.status_code, f"{method} {path}: {response.status_code} {detail}")
        if not response.content:
            return None
        if "json" not in response.headers.get("content-type", ""):
            return None
        return response.json()

    @staticmethod
    def _created_id(location: str) -> str:
        return location.rstrip("/").rsplit("/", 1)[-1]

    # --- realms ---------------------------------------------------------------------------------------------

    async def realms(self) -> list[dict[str, Any]]:
        return list(await self._send("GET", "admin/realms") or [])

    async def create_realm(self, body: dict[str, Any]) -> str:
        await self._send("POST", "admin/realms", body)
        return str(body["realm"])

    async def update_realm(self, realm: str, body: dict[str, Any]) -> None:
        await self._send("PUT", f"admin/realms/{_q(realm)}", body)

    async def delete_realm(self, realm: str) -> None:
        await self._send("DELETE", f"admin/realms/{_q(realm)}")

    # --- realm roles ----------------------------------------------------------------------------------------

    async def roles(self, realm: str) -> list[dict[str, Any]]:
        return list(
            await self._send("GET", f"admin/realms/{_q(realm)}/roles", briefRepresentation="false") or []
        )

    async def create_role(self, realm: str, body: dict[str, Any]) -> None:
        await self._send("POST", f"admin/realms/{_q(realm)}/roles", body)

    async def update_role(self, realm: str, name: str, body: dict[str, Any]) -> None:
        await self._send("PUT", f"admin/realms/{_q(realm)}/roles/{_q(name)}", body)

    async def delete_role(self, realm: str, name: str) -> None:
        await self._send("DELETE", f"admin/realms/{_q(realm)}/roles/{_q(name)}")

    # --- clients --------------------------------------------------------------------------------------------

    async def clients(self, realm: str) -> list[dict[str, Any]]:
        return list(await self._send("GET", f"admin/realms/{_q(realm)}/clients") or [])

    async def create_client(self, realm: str, body: dict[str, Any]) -> str:
        """The new client's id. Keycloak answers 201 with a Location header and no body."""
        if self._on_write is not None:
            self._on_write()
        path = f"admin/realms/{_q(realm)}/clients"
        try:
            response = await self._conn.a_raw_post(path, json.dumps(body))
        except KeycloakError as e:
            raise AdminError(0, f"POST {path}: {e}") from e
        if response.status_code >= 400:
            raise AdminError(
                response.status_code, f"POST {path}: {response.status_code} {response.text[:300]}"
            )
        return self._created_id(response.headers.get("location", ""))

    async def update_client(self, realm: str, client_id: str, body: dict[str, Any]) -> None:
        await self._send("PUT", f"admin/realms/{_q(realm)}/clients/{_q(client_id)}", body)

    async def delete_client(self, realm: str, client_id: str) -> None:
        await self._send("DELETE", f"admin/realms/{_q(realm)}/clients/{_q(client_id)}")

    async def client_secret(self, realm: str, client_id: str) -> str:
        answer = await self._send("GET", f"admin/realms/{_q(realm)}/clients/{_q(client_id)}/client-secret")
        return str((answer or {}).get("value") or "")
