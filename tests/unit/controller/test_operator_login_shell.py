"""The operator's own login in the shell (shell/own_login.py through Logins): over an in-memory Keycloak
(token endpoint, master's clients, role mappings) and an in-memory Secret store. Which login is tried, when
the bootstrap admin makes or repairs the client, rotations cut short anywhere, and no secret in any
message."""

from __future__ import annotations

import asyncio
import base64
import copy
import logging
from typing import Any

import httpx
import pytest

from keycloak_operator.core import operator_login
from keycloak_operator.core.replication.resources import Credentials
from keycloak_operator.kernel import names
from keycloak_operator.shell import own_login
from keycloak_operator.shell.admin import connection as admin_connection
from keycloak_operator.shell.admin import keycloak as keycloak_admin
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin_logins import Login, Logins
from keycloak_operator.shell.http_limits import CappedTransport
from keycloak_operator.shell.kube import ApiError, Resource

UID = "kc-uid"
CRED = Credentials("ns", "kc-initial-admin", server_owned=True, keycloak="kc", keycloak_uid=UID)
URL = "http://kc-service.ns:8080"
BOOT = ("admin", "boot-password-xyz")


def b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def unb64(value: str) -> str:
    return base64.b64decode(value).decode()


class Server:
    """master's clients and the service accounts' realm roles; `down`: nothing answers."""

    def __init__(self) -> None:
        self.clients: dict[str, dict[str, Any]] = {}
        self.sa_roles: dict[str, list[dict[str, Any]]] = {}
        self.bootstrap: tuple[str, str] | None = BOOT
        self.down = False
        self.logins: list[tuple[str, str]] = []  # (kind, username or client id)
        self.fail_put = False
        self.fail_role_mapping = False

    def client_by_id(self, client_id: str) -> dict[str, Any] | None:
        return next((c for c in self.clients.values() if c["clientId"] == client_id), None)

    def knows(self, client_id: str) -> str | None:
        found = self.client_by_id(client_id)
        return found.get("secret") if found else None


class FakeAdmin:
    def __init__(self, server: Server, login: Login) -> None:
        self.server, self.login_ = server, login
        self.closed = False

    async def login(self) -> None:
        s, login = self.server, self.login_
        if s.down:
            raise AdminError(0, f"{login.url}: admin login failed (unreachable)")
        s.logins.append(("client" if login.client else "password", login.username))
        if login.client:
            c = s.client_by_id(login.username)
            ok = (
                c is not None
                and c.get("secret") == login.password
                and c.get("serviceAccountsEnabled")
                and c.get("enabled", True)  # Keycloak refuses a disabled client (401)
            )
        else:
            ok = s.bootstrap == (login.username, login.password)
        if not ok:
            raise AdminError(401, f"{login.url}: admin login failed (401)")

    async def close(self) -> None:
        self.closed = True

    @staticmethod
    def segment(part: str) -> str:
        return part

    async def get_list(self, path: str, **params: Any) -> list[Any]:
        if path.endswith("/role-mappings/realm"):
            return list(self.server.sa_roles.get(path.split("/")[4], []))
        assert path == "admin/realms/master/clients"
        return [copy.deepcopy(c) for c in self.server.clients.values() if c["clientId"] == params["clientId"]]

    async def create_at(self, path: str, body: dict[str, Any]) -> str:
        uuid = f"uuid-{len(self.server.clients)}"
        self.server.clients[uuid] = {**copy.deepcopy(body), "id": uuid}
        return uuid

    async def request(self, method: str, path: str, body: Any = None) -> Any:
        parts = path.split("/")
        if method == "PUT":
            if self.server.fail_put:
                raise AdminError(500, f"PUT {path}: 500")
            self.server.clients[parts[4]].update(copy.deepcopy(body))
            return None
        if path.endswith("/service-account-user"):
            return {"id": f"sa-{parts[4]}"}
        if path.endswith("/roles/admin"):
            return {"id": "role-admin", "name": "admin"}
        if method == "POST" and path.endswith("/role-mappings/realm"):
            if self.server.fail_role_mapping:
                raise AdminError(0, f"POST {path}: no complete answer within 20 s")
            self.server.sa_roles.setdefault(parts[4], []).extend(body)
            return None
        raise AssertionError(f"unexpected {method} {path}")


class FakeKube:
    def __init__(self) -> None:
        self.secrets: dict[str, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self.fail_patch_after = -1  # merge patches that succeed before one fails (-1: never fails)
        self.version = 0

    def put(self, obj: dict[str, Any]) -> None:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        self.secrets[obj["metadata"]["name"]] = obj

    async def get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        found = self.secrets.get(name)
        return copy.deepcopy(found) if found else None

    async def merge_patch(self, res: Resource, namespace: str, name: str, patch: dict[str, Any]) -> Any:
        if self.fail_patch_after == 0:
            raise ApiError(503, "PATCH: 503 unavailable")
        self.fail_patch_after -= 1
        obj = self.secrets[name]
        if patch["metadata"].get("resourceVersion") != obj["metadata"]["resourceVersion"]:
            raise ApiError(409, "PATCH: 409 conflict")
        annotations = obj["metadata"].setdefault("annotations", {})
        for k, v in (patch["metadata"].get("annotations") or {}).items():
            annotations.pop(k, None) if v is None else annotations.__setitem__(k, v)
        for k, v in patch["data"].items():
            obj["data"].pop(k, None) if v is None else obj["data"].__setitem__(k, v)
        self.put(obj)
        return copy.deepcopy(obj)

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        assert obj["kind"] == "Event"
        self.events.append(obj)
        return obj


class World:
    def __init__(self) -> None:
        self.server, self.kube = Server(), FakeKube()
        self.kube.put(
            {
                "metadata": {"name": "kc-initial-admin", "namespace": "ns"},
                "data": {"username": b64(BOOT[0]), "password": b64(BOOT[1])},
            }
        )
        self.logins = Logins(self.kube, lambda: None, lambda login: FakeAdmin(self.server, login))  # type: ignore[arg-type]

    def login_secret(self, secret: str = "first-secret-abc", owner: str = UID, **data: str) -> None:
        self.kube.put(
            {
                "metadata": {
                    "name": names.operator_login_secret("kc"),
                    "namespace": "ns",
                    "ownerReferences": [{"uid": owner, "controller": True}],
                },
                "data": {"clientId": b64("kcop-operator"), "clientSecret": b64(secret), **data},
            }
        )

    def stored(self) -> dict[str, str]:
        return {k: unb64(v) for k, v in self.kube.secrets["kc-operator-login"]["data"].items()}

    def rotate(self) -> None:
        secret = self.kube.secrets["kc-operator-login"]
        secret["metadata"].setdefault("annotations", {})[names.ANNOTATION_ROTATE_LOGIN] = "please"
        self.kube.put(secret)

    async def admin(self) -> FakeAdmin | AdminError:
        self.server.logins.clear()
        return await self.logins.admin(URL, CRED, only_deletes=False)  # type: ignore[return-value]

    def reasons(self) -> list[str]:
        return [e["reason"] for e in self.kube.events]


@pytest.fixture
def world() -> World:
    return World()


def used(admin: Any) -> tuple[str, str, bool]:
    assert not isinstance(admin, AdminError), admin
    return admin.login_.username, admin.login_.password, admin.login_.client


async def test_without_its_login_secret_the_bootstrap_admin_logs_in_as_before(world: World) -> None:
    assert used(await world.admin()) == (*BOOT, False)
    assert world.server.clients == {} and world.reasons() == []


async def test_the_bootstrap_admin_makes_the_client_once_then_the_client_logs_in(world: World) -> None:
    world.login_secret()
    assert used(await world.admin()) == ("kcop-operator", "first-secret-abc", True)
    assert world.server.logins == [
        ("client", "kcop-operator"),
        ("password", "admin"),
        ("client", "kcop-operator"),
    ]
    (client,) = world.server.clients.values()
    assert operator_login.drift(client) == [] and client["secret"] == "first-secret-abc"
    assert world.server.sa_roles == {f"sa-{client['id']}": [{"id": "role-admin", "name": "admin"}]}
    assert world.reasons() == [own_login.READY]
    assert "may be deleted" in world.kube.events[0]["message"]
    # The next round: the client alone; the bootstrap admin gone changes nothing.
    world.server.bootstrap = None
    assert used(await world.admin()) == ("kcop-operator", "first-secret-abc", True)
    assert world.server.logins == [("client", "kcop-operator")]
    assert world.reasons() == [own_login.READY]


async def test_a_client_changed_by_hand_is_repaired_with_the_bootstrap_admin(world: World) -> None:
    world.login_secret()
    await world.admin()
    (client,) = world.server.clients.values()
    client.update(secret="changed-by-hand", serviceAccountsEnabled=False, directAccessGrantsEnabled=True)
    world.server.sa_roles.clear()
    assert used(await world.admin())[2]
    assert operator_login.drift(client) == [] and client["secret"] == "first-secret-abc"
    assert world.server.sa_roles[f"sa-{client['id']}"] == [{"id": "role-admin", "name": "admin"}]
    assert len(world.server.clients) == 1


async def test_neither_login_working_is_an_error_naming_both_and_no_secret(world: World) -> None:
    world.login_secret()
    world.server.bootstrap = None
    found = await world.admin()
    assert isinstance(found, AdminError) and found.status == 401
    assert "kcop-operator" in str(found) and "bootstrap admin" in str(found)
    assert "first-secret-abc" not in str(found) and BOOT[1] not in str(found)


async def test_an_unreachable_server_is_not_answered_with_the_bootstrap_admin(world: World) -> None:
    world.login_secret()
    world.server.down = True
    found = await world.admin()
    assert isinstance(found, AdminError) and found.status == 0
    assert world.server.clients == {}


async def test_a_client_of_that_id_someone_else_made_is_not_taken_over(world: World) -> None:
    world.login_secret()
    world.server.clients["theirs"] = {"id": "theirs", "clientId": "kcop-operator", "secret": "x"}
    assert used(await world.admin()) == (*BOOT, False)  # replication goes on with the bootstrap admin
    assert world.server.clients["theirs"] == {"id": "theirs", "clientId": "kcop-operator", "secret": "x"}
    assert world.server.sa_roles == {}
    assert world.reasons() == [own_login.FAILED]
    assert "not made by the operator" in world.kube.events[0]["message"]
    assert used(await world.admin()) == (*BOOT, False)
    assert world.reasons() == [own_login.FAILED]  # said once, not on every round


async def test_a_login_secret_the_keycloak_does_not_own_is_never_told_to_keycloak(world: World) -> None:
    world.login_secret(owner="someone-else")
    assert used(await world.admin()) == (*BOOT, False)
    assert world.server.clients == {}


async def test_a_rotation_needs_no_bootstrap_admin_and_leaves_one_secret(world: World) -> None:
    world.login_secret()
    await world.admin()
    world.server.bootstrap = None
    world.rotate()
    admin = await world.admin()
    stored = world.stored()
    new = stored["clientSecret"]
    assert new != "first-secret-abc" and set(stored) == {"clientId", "clientSecret", "previousClientSecret"}
    assert stored["previousClientSecret"] == "first-secret-abc"  # until the next rotation replaces it
    assert (
        names.ANNOTATION_ROTATE_LOGIN
        not in world.kube.secrets["kc-operator-login"]["metadata"]["annotations"]
    )
    assert world.server.knows("kcop-operator") == new
    assert used(admin) == ("kcop-operator", new, True)
    assert world.reasons() == [own_login.READY, own_login.ROTATED]
    assert all(new not in e["message"] for e in world.kube.events)
    assert used(await world.admin()) == ("kcop-operator", new, True)


@pytest.mark.parametrize("cut", ["begin", "tell", "promote"])
async def test_a_rotation_cut_at_any_step_finishes_on_a_later_round(world: World, cut: str) -> None:
    world.login_secret()
    await world.admin()
    world.server.bootstrap = None  # the rotation must never need it
    world.rotate()
    if cut == "begin":
        world.kube.fail_patch_after = 0
    elif cut == "tell":
        world.server.fail_put = True
    else:
        world.kube.fail_patch_after = 1  # the pending secret stored, Keycloak told, the promotion fails
    assert used(await world.admin())[2]  # the round goes on with the login it had
    world.kube.fail_patch_after, world.server.fail_put = -1, False
    admin = await world.admin()
    stored = world.stored()
    assert set(stored) == {"clientId", "clientSecret", "previousClientSecret"}
    assert stored["clientSecret"] != "first-secret-abc"
    assert world.server.knows("kcop-operator") == stored["clientSecret"]
    assert used(admin) == ("kcop-operator", stored["clientSecret"], True)
    if cut == "promote":  # Keycloak had the pending secret: the second candidate logged in
        assert world.server.logins[:2] == [("client", "kcop-operator"), ("client", "kcop-operator")]


async def test_a_server_back_on_a_database_from_before_the_rotation_is_told_the_current_secret(
    world: World,
) -> None:
    """A blue-green copy made before a rotation, a rollback or a restore: Keycloak holds the replaced
    secret, the bootstrap admin is gone; the previous secret logs in and Keycloak is told the current one."""
    world.login_secret()
    await world.admin()
    world.server.bootstrap = None
    world.rotate()
    await world.admin()
    current = world.stored()["clientSecret"]
    world.server.client_by_id("kcop-operator")["secret"] = "first-secret-abc"  # the older database
    admin = await world.admin()
    assert used(admin) == ("kcop-operator", "first-secret-abc", True)
    assert world.server.knows("kcop-operator") == current
    assert used(await world.admin()) == ("kcop-operator", current, True)
    assert all(
        current not in e["message"] and "first-secret-abc" not in e["message"] for e in world.kube.events
    )


async def test_a_client_made_but_not_yet_given_admin_cannot_log_in_and_is_repaired(world: World) -> None:
    """Cut between making the client and mapping `admin` to it (a crash, a timeout): the client is still
    disabled, its login fails, so the next round repairs it instead of using a client that may do nothing."""
    world.login_secret()
    world.server.fail_role_mapping = True
    assert used(await world.admin()) == (*BOOT, False)  # the round goes on with the bootstrap admin
    made = world.server.client_by_id("kcop-operator")
    assert made is not None and made["enabled"] is False and world.server.sa_roles == {}
    world.server.fail_role_mapping = False
    assert used(await world.admin()) == ("kcop-operator", "first-secret-abc", True)
    made = world.server.client_by_id("kcop-operator")
    assert made is not None and made["enabled"] is True
    assert [r["name"] for roles in world.server.sa_roles.values() for r in roles] == ["admin"]


async def test_no_secret_reaches_a_log_line(world: World, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    world.login_secret()
    await world.admin()
    world.rotate()
    world.server.fail_put = True
    await world.admin()
    world.server.fail_put = False
    await world.admin()
    text = caplog.text + str(world.kube.events)
    for value in ("first-secret-abc", BOOT[1], world.stored()["clientSecret"]):
        assert value not in text


# --- the client-credentials admin client keeps every limit --------------------------------------------------


async def test_a_client_credentials_login_keeps_the_caps_and_sends_the_client_grant(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a = keycloak_admin.KeycloakAdmin("http://kc:8080", "kcop-operator", "s3cret", client_credentials=True)
    for client, cap in (
        (a._conn.async_s, admin_connection.MAX_RESPONSE_BYTES),
        (a._conn.keycloak_openid.connection.async_s, admin_connection.MAX_TOKEN_RESPONSE_BYTES),
    ):
        transport = client._transport
        assert isinstance(transport, CappedTransport) and transport._limit == cap
    sent: list[tuple[str, dict[str, str]]] = []

    def token(request: httpx.Request) -> httpx.Response:
        sent.append((request.url.path, dict(httpx.QueryParams(request.content.decode()))))
        return httpx.Response(200, json={"access_token": "t", "expires_in": 60})

    inner = httpx.MockTransport(token)
    a._conn.keycloak_openid.connection.async_s = httpx.AsyncClient(
        transport=CappedTransport(1000, inner=inner)
    )
    await a.login()
    ((path, form),) = sent
    assert path == "/realms/master/protocol/openid-connect/token"
    assert (form["grant_type"], form["client_id"], form["client_secret"]) == (
        "client_credentials",
        "kcop-operator",
        "s3cret",
    )
    assert not form.get("username") and not form.get("password")

    # A token endpoint that never answers is cut at the request deadline, like every other request.
    monkeypatch.setattr(admin_connection, "REQUEST_DEADLINE_S", 0.05)

    async def never(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(10)
        raise AssertionError("not reached")

    b = keycloak_admin.KeycloakAdmin("http://kc:8080", "kcop-operator", "s3cret", client_credentials=True)
    b._conn.keycloak_openid.connection.async_s = httpx.AsyncClient(transport=httpx.MockTransport(never))
    with pytest.raises(AdminError, match="no complete answer within"):
        await b.login()
    assert b.unusable
