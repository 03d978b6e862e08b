"""The connection every call of the Keycloak admin REST API goes through: python-keycloak's authenticated
async connection, with the deadlines, size caps, write count and errors below.

python-keycloak handles the token (password or client-credentials grant against `master`, refresh, re-login
on 401); its `KeycloakAdmin` methods, though, take the realm from mutable state on the connection, which
concurrent rounds over many realms cannot share safely. So this layer passes the realm in every path and
uses the connection's raw calls (ADR 0008). Every write is counted, so tests and metrics can prove a quiet
resync. The calls themselves are grouped by area of the API, a class `<Area>Admin` in shell/<area>_admin.py
each (admin/keycloak.py).

A server may be one a tenant named, so nothing it does may hold the operator: every request (token
refresh included) has a total deadline, and every answer a size cap with compression refused
(shell/http_limits.py). Both are read once from the environment.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from keycloak import KeycloakOpenIDConnection
from keycloak.exceptions import KeycloakConnectionError, KeycloakError

from keycloak_operator.core import bounded_json
from keycloak_operator.shell.http_limits import IDENTITY, CappedTransport
from keycloak_operator.shell.settings import AdminLimits

_LIMITS = AdminLimits.parse()  # the environment's (shell/settings.py), read once as the module loads
# Whole request, first byte to last: a trickling server is cut off here, whatever its pace.
REQUEST_DEADLINE_S = _LIMITS.request_deadline_s
# Largest answer read: what the answer's text costs. What it costs parsed (up to twenty-four times its
# size: "[{},{},...]") is bounded by JSON_LIMITS below, whoever runs the server; the Keycloaks the operator
# runs get more bytes for realm lists of full realms, which are long in text but not in values.
MAX_RESPONSE_BYTES = _LIMITS.max_response_bytes
MAX_OWN_RESPONSE_BYTES = _LIMITS.max_own_response_bytes
MAX_TOKEN_RESPONSE_BYTES = 1024 * 1024  # the token endpoint's answer, parsed by python-keycloak itself
# What an answer may hold once parsed, whatever its size in bytes (core/bounded_json.py says why).
JSON_LIMITS = _LIMITS.json

T = TypeVar("T")


class AdminError(Exception):
    """A request Keycloak refused or could not answer; the message never holds credentials."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _q(part: str) -> str:
    """One path segment; '.' and '..' never (quoting keeps dots, and httpx would resolve them)."""
    if part in ("", ".", ".."):
        raise AdminError(0, f"not a usable name in a Keycloak path: {part!r}")
    return quote(part, safe="")


def _bounded_client(verify: ssl.SSLContext | bool, limit: int) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=CappedTransport(limit, verify=verify), headers={"Accept-Encoding": IDENTITY}
    )


class AdminConnection:
    def __init__(
        self,
        url: str,
        username: str,
        password: str,
        on_write: Callable[[], None] | None = None,
        ca_pem: str | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        *,
        client_credentials: bool = False,
    ):
        """`ca_pem`: check an https server's certificate against this CA instead of the system's.
        `client_credentials`: `username` and `password` are a confidential client of `master` and its secret
        (the operator's own login, ADR 0023), not a user."""
        self.url = url
        if client_credentials:
            self._conn = KeycloakOpenIDConnection(
                server_url=url.rstrip("/") + "/",
                realm_name="master",
                client_id=username,
                client_secret_key=password,
                timeout=int(REQUEST_DEADLINE_S),
            )
        else:
            self._conn = KeycloakOpenIDConnection(
                server_url=url.rstrip("/") + "/",
                username=username,
                password=password,
                realm_name="master",
                user_realm_name="master",
                client_id="admin-cli",
                timeout=int(REQUEST_DEADLINE_S),
            )
        # python-keycloak makes two httpx clients (admin calls; the token endpoint, in its KeycloakOpenID) and
        # takes no transport: both are replaced, before either has opened a connection.
        verify: ssl.SSLContext | bool = ssl.create_default_context(cadata=ca_pem) if ca_pem else True
        self._conn.async_s = _bounded_client(verify, max_response_bytes)
        # The token endpoint's answer is parsed by python-keycloak, outside the bounded parse here: its cap
        # is what bounds it. A token answer is a few kilobytes, tens with many roles.
        token_cap = min(max_response_bytes, MAX_TOKEN_RESPONSE_BYTES)
        self._conn.keycloak_openid.connection.async_s = _bounded_client(verify, token_cap)
        self._on_write = on_write
        self.timed_out = False  # a request ran out its deadline
        # The server could not be reached mid-round, ran out a deadline, or sent an answer refused as
        # oversize or malformed. It is not asked again by this client (a round costs a trickling server one
        # deadline, and a hostile one one refused answer, not one per call); the round counts it as not
        # reached, and it backs off (core/replication/retry.py).
        self.unusable = False

    async def _guarded(self, what: str, call: Awaitable[T]) -> T:
        """Every way a request can go wrong, an AdminError: a deadline, a refused or broken answer, and
        whatever a hostile answer makes the client library raise (a token reply of the wrong shape, say)."""
        if self.unusable:
            call.close()  # type: ignore[attr-defined]  # a coroutine never awaited
            earlier = "ran out a deadline" if self.timed_out else "could not be reached or answered unusably"
            raise AdminError(0, f"{what}: not sent, the server {earlier} earlier in this round")
        try:
            async with asyncio.timeout(REQUEST_DEADLINE_S):
                return await call
        except TimeoutError:
            self.timed_out = self.unusable = True
            raise AdminError(0, f"{what}: no complete answer within {REQUEST_DEADLINE_S:.0f} s") from None
        except KeycloakConnectionError:
            self.unusable = True  # no connection, or an answer the transport refused (http_limits.py)
            raise
        except (AdminError, KeycloakError):
            raise
        except Exception as e:  # a server's answer must never end the round for the others
            self.unusable = True
            raise AdminError(0, f"{what}: unusable answer ({type(e).__name__})") from None

    async def login(self) -> None:
        """Fails early, with a clear error, on a wrong password or an unreachable server."""
        try:
            await self._guarded(f"{self.url}: admin login", self._conn.a_get_token())
        except KeycloakError as e:
            code = int(e.response_code or 0)
            cause = f": {e.__cause__}" if code == 0 and e.__cause__ else ""
            raise AdminError(
                code, f"{self.url}: admin login failed ({code or 'unreachable'}){cause}"
            ) from None

    async def close(self) -> None:
        await self._conn.async_s.aclose()
        await self._conn.keycloak_openid.connection.async_s.aclose()

    async def _send(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        call = {
            "GET": self._conn.a_raw_get,
            "POST": self._conn.a_raw_post,
            "PUT": self._conn.a_raw_put,
            "DELETE": self._conn.a_raw_delete,
        }[method]
        args: list[Any] = [path]
        if method in ("POST", "PUT") or (method == "DELETE" and body is not None):
            args.append(json.dumps(body))  # a role-mapping DELETE names its roles in a body
        if method != "GET" and self._on_write is not None:
            self._on_write()
        try:
            response = await self._guarded(f"{method} {path}", call(*args, **params))
        except KeycloakError as e:
            cause = f" ({e.__cause__})" if e.__cause__ else ""
            raise AdminError(0, f"{method} {path}: {e}{cause}") from e
        if response.status_code >= 400:
            detail = response.text[:300]
            raise AdminError(response.status_code, f"{method} {path}: {response.status_code} {detail}")
        if not response.content:
            return None
        if "json" not in response.headers.get("content-type", ""):
            return None
        try:
            return bounded_json.loads(response.content.decode("utf-8"), JSON_LIMITS)
        except bounded_json.TooLarge as e:
            self.unusable = True
            raise AdminError(response.status_code, f"{method} {path}: answer refused, {e}") from None
        except (ValueError, RecursionError):
            self.unusable = True
            raise AdminError(response.status_code, f"{method} {path}: the answer is not JSON") from None

    async def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """For the small adapters of one API area each (shell/admin/role_mapping.py): the same deadline, size
        cap, errors and write count as every call here. `path` is built with `segment`."""
        return await self._send(method, path, body, **params)

    async def get_list(self, path: str, **params: Any) -> list[Any]:
        """For the small adapters: a list endpoint's answer, which must be a JSON array."""
        return await self._list(path, **params)

    async def create_at(self, path: str, body: dict[str, Any]) -> str:
        """For the small adapters: POST of an object Keycloak names itself; the new object's id."""
        return await self._create(path, body)

    @staticmethod
    def segment(part: str) -> str:
        return _q(part)

    @staticmethod
    def _created_id(location: str) -> str:
        return location.rstrip("/").rsplit("/", 1)[-1]

    async def _list(self, path: str, **params: Any) -> list[Any]:
        """A list endpoint's answer, which must be a JSON array (its entries are checked by the planner)."""
        answer = await self._send("GET", path, **params)
        if answer is None:
            return []
        if not isinstance(answer, list):
            self.unusable = True
            raise AdminError(0, f"GET {path}: expected a list, got {type(answer).__name__}")
        return answer

    async def _create(self, path: str, body: dict[str, Any]) -> str:
        """POST of an object Keycloak names itself: it answers 201 with a Location header and no body."""
        if self._on_write is not None:
            self._on_write()
        try:
            response = await self._guarded(f"POST {path}", self._conn.a_raw_post(path, json.dumps(body)))
        except KeycloakError as e:
            cause = f" ({e.__cause__})" if e.__cause__ else ""
            raise AdminError(0, f"POST {path}: {e}{cause}") from e
        if response.status_code >= 400:
            raise AdminError(
                response.status_code, f"POST {path}: {response.status_code} {response.text[:300]}"
            )
        return self._created_id(response.headers.get("location", ""))
