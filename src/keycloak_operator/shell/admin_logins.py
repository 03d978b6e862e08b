"""Admin logins to Keycloak servers: which Secret holds them, the CA a server is checked against, and the last
login that worked (so a namespace being deleted, which takes its admin Secret with it, can still have its
realms deleted from Keycloak). Every Secret is read by name, in the namespace the credentials belong to.

On a Keycloak this operator runs, the operator's own client in `master` is tried first, and made with the
bootstrap admin when it cannot log in; its secret rotates on request (shell/own_login.py, ADR 0023).
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import Callable
from dataclasses import dataclass

from keycloak_operator.core.replication.resources import Credentials
from keycloak_operator.shell import own_login
from keycloak_operator.shell.admin.connection import MAX_OWN_RESPONSE_BYTES, MAX_RESPONSE_BYTES, AdminError
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.kube import SECRETS, ApiError, Kube


@dataclass(frozen=True)
class Login:
    """What one admin login needs: where, who, and the CA to check the server's certificate against."""

    url: str
    username: str
    password: str
    ca_pem: str | None = None
    own: bool = False  # a Keycloak this operator runs (a larger answer cap)
    client: bool = False  # username and password are a client of master and its secret (ADR 0023)


class Logins:
    def __init__(
        self,
        kube: Kube,
        on_write: Callable[[], None],
        admin_factory: Callable[[Login], KeycloakAdmin] | None = None,
    ) -> None:
        self.kube = kube
        self._on_write = on_write
        # The last credentials that logged in, per Secret and server.
        self._remembered: dict[tuple[Credentials, str], Login] = {}
        self._admin_factory = admin_factory or self._new_admin
        # Warnings about the operator's own login already posted (shell/own_login.py).
        self.reported: set[tuple[Credentials, str]] = set()

    def _new_admin(self, login: Login) -> KeycloakAdmin:
        cap = MAX_OWN_RESPONSE_BYTES if login.own else MAX_RESPONSE_BYTES
        return KeycloakAdmin(
            login.url,
            login.username,
            login.password,
            self._on_write,
            login.ca_pem,
            cap,
            client_credentials=login.client,
        )

    async def admin(self, url: str, cred: Credentials, only_deletes: bool) -> KeycloakAdmin | AdminError:
        if cred.server_owned and cred.keycloak:
            return await own_login.admin(self, url, cred, only_deletes)
        return await self.password_admin(url, cred, only_deletes)

    async def logged_in(self, login: Login) -> KeycloakAdmin | AdminError:
        """A new admin client for `login`, logged in; or why not."""
        admin = self._admin_factory(login)
        try:
            await admin.login()
        except AdminError as e:
            await admin.close()
            return e
        return admin

    async def client_admin(
        self, cred: Credentials, url: str, endpoint: str, ca_pem: str | None, client_id: str, secret: str
    ) -> KeycloakAdmin | AdminError:
        """The operator's own client of master, logged in (and remembered, like a password login)."""
        login = Login(endpoint, client_id, secret, ca_pem, own=True, client=True)
        found = await self.logged_in(login)
        if not isinstance(found, AdminError):
            self._remembered[(cred, url)] = login
        return found

    async def password_admin(
        self, url: str, cred: Credentials, only_deletes: bool
    ) -> KeycloakAdmin | AdminError:
        """The login of the credentials' username/password Secret (a Keycloak's bootstrap admin, or a
        namespace's login to an external server)."""
        found = await self._read_login(cred, cred.endpoint or url)
        if isinstance(found, AdminError):
            remembered = self._remembered.get((cred, url))
            if found.status != 404 or not only_deletes or remembered is None:
                return found
            found = remembered  # the Secret went first (its namespace is being deleted): finish the deletes
        admin = await self.logged_in(found)
        if not isinstance(admin, AdminError) and not found.client:
            self._remembered[(cred, url)] = found
        return admin

    async def _read_login(self, cred: Credentials, endpoint: str) -> Login | AdminError:
        found = await self._read_secret(cred.namespace, cred.secret, ("username", "password"))
        if isinstance(found, AdminError):
            return found
        username, password = found
        ca_pem = await self.ca_of(cred)
        if isinstance(ca_pem, AdminError):
            return ca_pem
        return Login(endpoint, username, password, ca_pem, own=cred.server_owned)

    async def ca_of(self, cred: Credentials) -> str | AdminError | None:
        """The CA the server's certificate is checked against (None: the system's)."""
        ca_pem = None
        if cred.ca_secret:
            # A Keycloak's TLS Secret holds ca.crt only when a private CA signed it; an external server's
            # CA Secret must hold it.
            required = () if cred.server_owned else ("ca.crt",)
            ca = await self._read_secret(cred.namespace, cred.ca_secret, required, optional=("ca.crt",))
            if isinstance(ca, AdminError):
                return ca
            ca_pem = ca[-1] or None
            if ca_pem is not None:
                try:
                    ssl.create_default_context(cadata=ca_pem)
                except (ssl.SSLError, ValueError):
                    return AdminError(
                        0, f"Secret {cred.namespace}/{cred.ca_secret}: ca.crt is not a PEM certificate"
                    )
        return ca_pem

    async def _read_secret(
        self, namespace: str, name: str, required: tuple[str, ...], optional: tuple[str, ...] = ()
    ) -> list[str] | AdminError:
        """The named keys of a Secret, decoded: required ones, then optional ones ('' when absent)."""
        where = f"Secret {namespace}/{name}"
        try:
            secret = await self.kube.get(SECRETS, namespace, name)
        except ApiError as e:
            return AdminError(e.status, f"{where}: {e.status}")
        if secret is None:
            return AdminError(404, f"{where} not found")
        data = secret.get("data") or {}
        try:
            values = [base64.b64decode(data[k]).decode() for k in required]
            values += [base64.b64decode(data.get(k) or "").decode() for k in optional if k not in required]
        except (KeyError, ValueError):
            return AdminError(0, f"{where} needs {' and '.join(f'`{k}`' for k in required)}")
        return values
