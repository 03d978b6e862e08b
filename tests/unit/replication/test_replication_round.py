"""The replication round end to end over an in-memory Kubernetes and Keycloak: which Keycloak calls it makes,
in which order, and what it writes back to Kubernetes (finalizers, Secrets, Events, statuses), round by round.

The pure planners have tests of their own; this one holds the shell that runs them: deletes before upserts,
a failed write reported on its own resource, a quiet round writing nothing, a forbidden namespace given no
write, and an unreachable external server retried later and later.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from keycloak_operator.core.replication import ObjectKey, marked
from keycloak_operator.core.replication.marker import read_marker
from keycloak_operator.core.replication.migrations import ATTR_FORMAT
from keycloak_operator.kernel import names
from keycloak_operator.kernel.names import HTTP_PORT
from keycloak_operator.shell import metrics
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.admin_logins import Login
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication import Replicator
from keycloak_operator.shell.replication.authentication_flows import AuthenticationFlowWriter
from keycloak_operator.shell.replication.groups import GroupWriter
from keycloak_operator.shell.replication.identity_providers import IdentityProviderWriter
from tests.unit.builders import BASE
from tests.unit.fake_flows import FlowServer
from tests.unit.fake_identity_providers import IdpServer
from tests.unit.paged import page_of

Obj = dict[str, Any]
KC_URL = names.keycloak_url("kc", "team-a", HTTP_PORT)
_CLIENT_PARTS = ("protocolMappers", "defaultClientScopes", "optionalClientScopes")
EXT_URL = "https://sso.example.com"
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
_KINDS = {
    names.REALM_PLURAL: names.REALM_KIND,
    names.CLIENT_PLURAL: names.CLIENT_KIND,
    names.CLIENT_SCOPE_PLURAL: names.CLIENT_SCOPE_KIND,
    names.GROUP_PLURAL: names.GROUP_KIND,
    names.IDENTITY_PROVIDER_PLURAL: names.IDENTITY_PROVIDER_KIND,
    names.AUTHENTICATION_FLOW_PLURAL: names.AUTHENTICATION_FLOW_KIND,
    names.KEYCLOAK_PLURAL: names.KEYCLOAK_KIND,
    "secrets": "Secret",
}


def _b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def _stamped(value: Any) -> Any:
    """Times the round takes from the clock, made comparable."""
    if isinstance(value, str):
        return _STAMP.sub("<now>", value)
    if isinstance(value, dict):
        return {k: _stamped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stamped(v) for v in value]
    return value


class FakeKube:
    """Objects by (kind, namespace, name); every write is recorded in `writes`."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.writes: list[tuple[Any, ...]] = []
        self._version = 0

    def add(self, obj: Obj) -> Obj:
        self._version += 1
        meta = obj["metadata"]
        meta.setdefault("uid", f"uid-{meta['namespace']}-{meta['name']}")
        meta.setdefault("generation", 1)
        meta.setdefault("creationTimestamp", f"2026-01-01T00:00:{self._version:02d}Z")
        meta["resourceVersion"] = str(self._version)
        self.objects[(obj["kind"], meta["namespace"], meta["name"])] = obj
        return obj

    async def list(self, res: Any, namespace: str | None, **_: Any) -> list[Obj]:
        kind = _KINDS[res.plural]
        return [
            copy.deepcopy(o)
            for (k, ns, _n), o in sorted(self.objects.items())
            if k == kind and namespace in (None, ns)
        ]

    async def list_page(
        self, res: Any, namespace: str | None, *, limit: int, token: str | None = None
    ) -> tuple[list[Obj], str | None]:
        return page_of(await self.list(res, namespace), limit, token)

    async def get(self, res: Any, namespace: str, name: str) -> Obj | None:
        found = self.objects.get((_KINDS[res.plural], namespace, name))
        return copy.deepcopy(found) if found else None

    async def apply(self, obj: Obj) -> Obj:
        self.writes.append(("apply", obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"], obj))
        return self.add(copy.deepcopy(obj))

    async def create(self, obj: Obj) -> Obj:
        involved = obj["involvedObject"]
        event = (involved["kind"], involved["name"], obj["type"], obj["reason"], obj["message"])
        self.writes.append(("event", *event))
        return obj

    async def merge_patch(self, res: Any, namespace: str, name: str, patch: Obj) -> Obj:
        self.writes.append(("patch", _KINDS[res.plural], namespace, name, patch))
        obj = self.objects[(_KINDS[res.plural], namespace, name)]
        meta = obj["metadata"]
        meta["finalizers"] = patch["metadata"]["finalizers"]
        self._version += 1
        meta["resourceVersion"] = str(self._version)
        if meta.get("deletionTimestamp") and not meta["finalizers"]:
            del self.objects[(_KINDS[res.plural], namespace, name)]
        return copy.deepcopy(obj)

    async def patch_status(self, res: Any, namespace: str, name: str, status: Obj) -> bool:
        self.writes.append(("status", _KINDS[res.plural], namespace, name, _stamped(status)))
        obj = self.objects[(_KINDS[res.plural], namespace, name)]
        merged = {**(obj.get("status") or {}), **status}
        obj["status"] = {k: v for k, v in merged.items() if v is not None}
        return True


class FakeKeycloak:
    """One server's realms, roles and clients; every admin call is recorded in `calls`."""

    def __init__(self) -> None:
        self.realms: dict[str, Obj] = {}
        self.roles: dict[str, dict[str, Obj]] = {}
        self.clients: dict[str, dict[str, Obj]] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.failing: set[str] = set()  # clientIds whose create or update is refused
        self.client_roles: dict[str, dict[str, Obj]] = {}  # by client id
        self.scopes = {"basic": "s-basic", "profile": "s-profile", "email": "s-email", "roles": "s-roles"}
        self.scope_objects: dict[str, dict[str, Obj]] = {}  # client scopes made through the API, by realm, id
        self.groups: dict[str, dict[str, Obj]] = {}  # groups by realm, id (parentId links the tree)
        self._ids = 0

    def realm(self, body: Obj) -> None:
        name = body["realm"]
        self.realms[name] = {k: v for k, v in body.items() if k != "roles"}
        self.roles[name] = {r["name"]: copy.deepcopy(r) for r in (body.get("roles") or {}).get("realm", [])}
        self.roles[name].setdefault("offline_access", {"name": "offline_access", "description": "built in"})
        self.clients[name] = {}

    def realm_scopes(self, realm: str) -> dict[str, Obj]:
        """The client scopes of `realm` made through the API (the built-in `scopes` are in every realm)."""
        return self.scope_objects.setdefault(realm, {})

    def client(self, realm: str, body: Obj) -> str:
        self._ids += 1
        remote = f"id-{self._ids}"
        self.clients[realm][remote] = {**copy.deepcopy(body), "id": remote}
        return remote


class FakeAdmin(KeycloakAdmin):
    """A KeycloakAdmin (the round tells logins that worked from errors by type) talking to a FakeKeycloak."""

    def __init__(self, server: FakeKeycloak, login: Login) -> None:  # no super(): no HTTP client
        self.server, self.login_ = server, login
        self.timed_out = self.unusable = False

    def _call(self, *call: Any) -> None:
        self.server.calls.append((self.login_.username, *call))

    async def login(self) -> None:
        if self.login_.password == "wrong":
            raise AdminError(401, f"{self.login_.url}: admin login failed (401)")

    async def close(self) -> None:
        pass

    async def realms(self) -> list[Obj]:
        self._call("realms")
        found = copy.deepcopy(list(self.server.realms.values()))
        for r in found:  # as Keycloak does: a set SMTP password is never returned
            if isinstance(r, dict) and (r.get("smtpServer") or {}).get("password"):
                r["smtpServer"]["password"] = "**********"
        return found

    async def create_realm(self, body: Obj) -> str:
        self._call("create_realm", body["realm"], body)
        self.server.realm(copy.deepcopy(body))
        return str(body["realm"])

    async def update_realm(self, realm: str, body: Obj) -> None:
        self._call("update_realm", realm, body)
        before = (self.server.realms[realm].get("smtpServer") or {}).get("password")
        self.server.realms[realm].update(copy.deepcopy(body))  # as Keycloak: `attributes` sent replace all
        smtp = self.server.realms[realm].get("smtpServer") or {}
        if smtp.get("password") == "**********":  # as Keycloak does: the mask keeps the stored password
            smtp["password"] = before

    async def delete_realm(self, realm: str) -> None:
        self._call("delete_realm", realm)
        del self.server.realms[realm]

    async def roles(self, realm: str) -> list[Obj]:
        self._call("roles", realm)
        # As Keycloak lists them: each says whether it is composite (false unless the test's role says so).
        return [{"composite": False, **copy.deepcopy(r)} for r in self.server.roles[realm].values()]

    async def create_role(self, realm: str, body: Obj) -> None:
        self._call("create_role", realm, body)
        self.server.roles[realm][body["name"]] = copy.deepcopy(body)

    async def update_role(self, realm: str, name: str, body: Obj) -> None:
        self._call("update_role", realm, name, body)
        self.server.roles[realm][name] = copy.deepcopy(body)

    async def delete_role(self, realm: str, name: str) -> None:
        self._call("delete_role", realm, name)
        del self.server.roles[realm][name]

    async def clients(self, realm: str) -> list[Obj]:
        self._call("clients", realm)
        return copy.deepcopy(list(self.server.clients[realm].values()))

    async def create_client(self, realm: str, body: Obj) -> str:
        self._call("create_client", realm, body)
        if body["clientId"] in self.server.failing:
            raise AdminError(500, f"create client {body['clientId']}: 500")
        return self.server.client(realm, body)

    async def update_client(self, realm: str, remote: str, body: Obj) -> None:
        self._call("update_client", realm, remote, body)
        if body["clientId"] in self.server.failing:
            raise AdminError(500, f"update client {body['clientId']}: 500")
        # As Keycloak does: a client PUT keeps the client's mappers and scopes (client_parts.py).
        kept = {k: v for k, v in self.server.clients[realm][remote].items() if k in _CLIENT_PARTS}
        self.server.clients[realm][remote] = {**copy.deepcopy(body), **kept}

    async def delete_client(self, realm: str, remote: str) -> None:
        self._call("delete_client", realm, remote)
        del self.server.clients[realm][remote]

    async def client_secret(self, realm: str, remote: str) -> str:
        self._call("client_secret", realm, remote)
        return f"secret-of-{remote}"

    async def client(self, realm: str, client_id: str) -> Obj:
        self._call("client", realm, client_id)
        return copy.deepcopy(self.server.clients[realm][client_id])

    async def client_scopes(self, realm: str) -> list[Obj]:
        self._call("client_scopes", realm)
        built_in = [{"name": n, "id": i} for n, i in self.server.scopes.items()]
        return [*built_in, *copy.deepcopy(list(self.server.realm_scopes(realm).values()))]

    async def client_scope(self, realm: str, scope_id: str) -> Obj:
        self._call("client_scope", realm, scope_id)
        return copy.deepcopy(self.server.realm_scopes(realm)[scope_id])

    async def create_client_scope(self, realm: str, body: Obj) -> str:
        self._call("create_client_scope", realm, body["name"])
        if body["name"] in self.server.failing:
            raise AdminError(500, f"create client scope {body['name']}: 500")
        taken = {*self.server.scopes, *(s["name"] for s in self.server.realm_scopes(realm).values())}
        if body["name"] in taken:
            raise AdminError(409, f"client scope {body['name']} exists")
        self.server._ids += 1
        remote = f"cs-{self.server._ids}"
        self.server.realm_scopes(realm)[remote] = {**copy.deepcopy(body), "id": remote}
        return remote

    async def update_client_scope(self, realm: str, scope_id: str, body: Obj) -> None:
        self._call("update_client_scope", realm, scope_id, body["name"])
        if body["name"] in self.server.failing:
            raise AdminError(500, f"update client scope {body['name']}: 500")
        before = self.server.realm_scopes(realm)[scope_id]
        # As Keycloak does: a PUT keeps the scope's mappers, and attributes it does not name.
        attributes = {**(before.get("attributes") or {}), **(body.get("attributes") or {})}
        kept = {k: v for k, v in before.items() if k == "protocolMappers"}
        self.server.realm_scopes(realm)[scope_id] = {**copy.deepcopy(body), "attributes": attributes, **kept}

    async def delete_client_scope(self, realm: str, scope_id: str) -> None:
        self._call("delete_client_scope", realm, scope_id)
        del self.server.realm_scopes(realm)[scope_id]

    async def write_scope_mapper(
        self, realm: str, scope_id: str, operation: str, mapper_id: str | None, body: Any
    ) -> None:
        s = self.server.realm_scopes(realm)[scope_id]
        name = body["name"] if body else next(m["name"] for m in s["protocolMappers"] if m["id"] == mapper_id)
        self._call("write_scope_mapper", realm, scope_id, operation, name)
        if s["name"] in self.server.failing:
            raise AdminError(500, f"mapper {name}: 500")
        kept = [m for m in s.get("protocolMappers") or [] if m["name"] != name]
        if operation != "delete":  # Keycloak adds config keys of its own
            config = {**body["config"], "introspection.token.claim": "true"}
            kept.append({**copy.deepcopy(body), "id": mapper_id or f"m-{name}", "config": config})
        s["protocolMappers"] = kept

    async def client_roles(self, realm: str, client_id: str) -> list[Obj]:
        self._call("client_roles", realm, client_id)
        # As Keycloak lists them: each says whether it is composite (none is, here).
        return [
            {"composite": False, **copy.deepcopy(r)}
            for r in self.server.client_roles.get(client_id, {}).values()
        ]

    async def write_client_part(
        self,
        realm: str,
        client_id: str,
        part: str,
        operation: str,
        name: str,
        remote_id: str | None,
        body: Any,
    ) -> None:
        self._call("write_client_part", realm, client_id, part, operation, name)
        c = self.server.clients[realm][client_id]
        if c["clientId"] in self.server.failing:
            raise AdminError(500, f"{part} {name}: 500")
        if part == "role":
            roles = self.server.client_roles.setdefault(client_id, {})
            roles.pop(name) if operation == "delete" else roles.__setitem__(name, copy.deepcopy(body))
        elif part == "mapper":
            kept = [m for m in c.get("protocolMappers") or [] if m["name"] != name]
            if operation != "delete":  # Keycloak adds config keys of its own
                config = {**body["config"], "introspection.token.claim": "true"}
                kept.append({**copy.deepcopy(body), "id": remote_id or f"m-{name}", "config": config})
            c["protocolMappers"] = kept
        else:
            field = "defaultClientScopes" if part == "default-scope" else "optionalClientScopes"
            names_ = [n for n in c.get(field) or [] if n != name]
            c[field] = names_ if operation == "delete" else [*names_, name]


class FakeGroups:
    """The group calls (shell/admin/group.py) on a FakeKeycloak, as Keycloak answers them: paths built
    from the tree, sibling names unique, attribute values lists only, a delete taking the subgroups along.
    Writes are recorded in the server's `calls`; reads are not (the other tests' call lists stay as they
    were)."""

    def __init__(self, server: FakeKeycloak, admin: KeycloakAdmin) -> None:
        self.server = server
        self.user = admin.login_.username if isinstance(admin, FakeAdmin) else ""

    def _in(self, realm: str) -> dict[str, Obj]:
        return self.server.groups.setdefault(realm, {})

    def _path(self, realm: str, g: Obj) -> str:
        up = g.get("parentId")
        return (self._path(realm, self._in(realm)[up]) if up else "") + "/" + g["name"]

    def _shown(self, realm: str, g: Obj) -> Obj:
        out = {**copy.deepcopy(g), "path": self._path(realm, g)}
        return out if g.get("parentId") else {k: v for k, v in out.items() if k != "parentId"}

    async def groups(self, realm: str) -> list[Obj]:
        return [self._shown(realm, g) for g in self._in(realm).values()]

    async def group(self, realm: str, group_id: str) -> Obj:
        return self._shown(realm, self._in(realm)[group_id])

    def _check(self, realm: str, name: str, parent_id: str | None, own: str | None = None) -> None:
        if name in self.server.failing:
            raise AdminError(500, f"group {name}: 500")
        if parent_id is not None and parent_id not in self._in(realm):
            raise AdminError(404, f"parent group {parent_id} not found")
        siblings = [g for i, g in self._in(realm).items() if g.get("parentId") == parent_id and i != own]
        if any(g["name"] == name for g in siblings):
            raise AdminError(409, f"Sibling group named '{name}' already exists.")

    async def create(self, realm: str, parent_id: str | None, body: Obj) -> str:
        self.server.calls.append((self.user, "create_group", realm, body["name"]))
        self._check(realm, body["name"], parent_id)
        if any(not isinstance(v, list) for v in (body.get("attributes") or {}).values()):
            raise AdminError(400, "Cannot parse the JSON")
        self.server._ids += 1
        remote = f"g-{self.server._ids}"
        group = {
            "id": remote,
            "name": body["name"],
            "attributes": copy.deepcopy(body.get("attributes") or {}),
        }
        self._in(realm)[remote] = {**group, "parentId": parent_id, "realmRoles": [], "clientRoles": {}}
        return remote

    async def update(self, realm: str, group_id: str, body: Obj) -> None:
        self.server.calls.append((self.user, "update_group", realm, group_id))
        g = self._in(realm)[group_id]
        self._check(realm, body["name"], g.get("parentId"), group_id)
        g["name"] = body["name"]
        if body.get("attributes") is not None:  # as Keycloak: a PUT naming attributes replaces them whole
            g["attributes"] = copy.deepcopy(body["attributes"])

    async def move(self, realm: str, group_id: str, name: str, parent_id: str | None) -> None:
        self.server.calls.append((self.user, "move_group", realm, group_id, parent_id))
        self._check(realm, name, parent_id, group_id)
        self._in(realm)[group_id]["parentId"] = parent_id

    async def delete(self, realm: str, group_id: str) -> None:
        self.server.calls.append((self.user, "delete_group", realm, group_id))
        groups = self._in(realm)
        if group_id not in groups:
            raise AdminError(404, f"group {group_id} not found")
        for child in [i for i, g in groups.items() if g.get("parentId") == group_id]:
            await self.delete(realm, child)
        del groups[group_id]

    async def write_mappings(
        self, realm: str, group_id: str, client_uuid: str | None, add: bool, roles: Any
    ) -> None:
        names_ = sorted(r["name"] for r in roles)
        self.server.calls.append((self.user, "map_group" if add else "unmap_group", realm, group_id, names_))
        g = self._in(realm)[group_id]
        if client_uuid is None:
            have = g["realmRoles"]
            g["realmRoles"] = sorted({*have, *names_} if add else set(have) - set(names_))
            return
        client_id = self.server.clients[realm][client_uuid]["clientId"]
        have = g["clientRoles"].get(client_id, [])
        now = sorted({*have, *names_} if add else set(have) - set(names_))
        g["clientRoles"] = (
            {**g["clientRoles"], client_id: now}
            if now
            else {k: v for k, v in g["clientRoles"].items() if k != client_id}
        )


def _resource(kind: str, ns: str, name: str, spec: Obj, **meta: Any) -> Obj:
    return {
        "apiVersion": names.API_VERSION,
        "kind": kind,
        "metadata": {"namespace": ns, "name": name, **meta},
        "spec": spec,
    }


def _realm(ns: str, name: str, server: Obj, **spec: Any) -> Obj:
    return _resource(names.REALM_KIND, ns, name, {"server": server, **spec})


def _client(ns: str, name: str, realm: Obj, **spec: Any) -> Obj:
    return _resource(names.CLIENT_KIND, ns, name, {"realm": realm, "clientId": name, **spec})


ON_KC = {"keycloak": {"name": "kc", "namespace": "team-a"}}


class World:
    def __init__(self) -> None:
        self.kube = FakeKube()
        self.server = FakeKeycloak()
        self.metrics: list[tuple[Any, ...]] = []
        self.now = 1000.0  # the round's monotonic clock, in seconds
        self.replicator = Replicator(
            self.kube,  # type: ignore[arg-type]
            None,
            WriteLimiter(10_000, 10_000),
            lambda login: FakeAdmin(self.server, login),
            clock=lambda: self.now,
        )
        self.idps = IdpServer()  # identity providers, behind the API their writer uses
        self.flows = FlowServer()  # authentication flows, likewise
        self.flows.providers = lambda realm: self.idps.realm(realm).values()
        for writer in self.replicator.inside_realm:
            if isinstance(writer, GroupWriter):
                writer.api = lambda admin: FakeGroups(self.server, admin)
            if isinstance(writer, IdentityProviderWriter):
                writer.api_of = self.idps.api
                writer.groups_of = lambda admin: FakeGroups(self.server, admin)
                writer.flows_of = self.flows.api
            if isinstance(writer, AuthenticationFlowWriter):
                writer.api_of = self.flows.api
                writer.idps_of = self.idps.api

    def secret(self, ns: str, name: str, username: str, password: str) -> None:
        data = {"username": _b64(username), "password": _b64(password)}
        self.kube.add(
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": ns, "name": name}, "data": data}
        )

    async def round(self, url: str) -> tuple[float | None, list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """The round's retry delay, its Keycloak calls and Kubernetes writes (Events, patches, Secrets)."""
        self.server.calls.clear()
        self.kube.writes.clear()
        self.metrics.clear()
        delay = await self.replicator.sync(url)
        return delay, list(self.server.calls), list(self.kube.writes)

    def obj(self, kind: str, ns: str, name: str) -> Obj:
        return self.kube.objects[(kind, ns, name)]

    def delete(self, kind: str, ns: str, name: str) -> None:
        self.obj(kind, ns, name)["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> World:
    return make_world(monkeypatch)


def make_world(monkeypatch: pytest.MonkeyPatch) -> World:
    """Team A runs Keycloak `kc`, which takes realms from teams B and C; realm `main` takes clients from B."""
    w = server_world(monkeypatch)
    w.secret("team-x", "ext-admin", "ext-admin", "wrong")
    roles = [{"name": "admin", "description": "all"}, {"name": "viewer"}]
    w.kube.add(_realm("team-a", "main", ON_KC, roles=roles, clientNamespaces=["team-b"]))
    w.kube.add(_realm("team-b", "other", ON_KC))
    w.kube.add(_realm("team-a", "lost", {"keycloak": {"name": "nokc"}}))
    ext = {"external": {"url": EXT_URL, "adminSecret": {"name": "ext-admin"}}}
    w.kube.add(_realm("team-x", "ext", ext))
    main = {"name": "main", "namespace": "team-a"}
    w.kube.add(_client("team-a", "web", main, redirectUris=["https://web/*"]))
    w.kube.add(_client("team-b", "spa", main, publicClient=True))
    w.kube.add(_client("team-c", "intruder", main))
    w.kube.add(_client("team-a", "stray", {"name": "missing"}))
    w.kube.add(_client("team-a", "onlost", {"name": "lost"}))
    # A realm some earlier resource declared, whose resource is gone: an orphan of the server's admin.
    w.server.realm({"realm": "ghost", "attributes": _ghost_marker()})
    return w


def server_world(monkeypatch: pytest.MonkeyPatch) -> World:
    """Team A runs Keycloak `kc`, which takes realms from teams B and C; nothing is declared on it yet."""
    w = World()
    for name in ("replication_write", "resource_result", "replication_conflict", "unlisted_namespaces"):
        monkeypatch.setattr(metrics, name, lambda *a, _n=name: w.metrics.append((_n, *a)))
    kc = {**BASE, "realmNamespaces": ["team-b", "team-c"]}
    w.kube.add(_resource(names.KEYCLOAK_KIND, "team-a", "kc", kc))
    w.secret("team-a", names.admin_secret("kc"), "kc-admin", "pw")
    return w


def _ghost_marker() -> Obj:
    return marked({"realm": "ghost"}, ObjectKey(names.REALM_KIND, "team-z", "ghost"))["attributes"]


def _events(writes: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [w[1:] for w in writes if w[0] == "event"]


def _phases(writes: list[tuple[Any, ...]]) -> dict[str, str]:
    return {f"{w[2]}/{w[3]}": w[4].get("phase") for w in writes if w[0] == "status" and "phase" in w[4]}


def _writing(calls: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The admin calls that are not plain reads, as (method, realm). A client's roles are read every round
    (the grant rule holds for every client, shell/replication/service_accounts.py)."""
    return [
        c[1:3] for c in calls if c[1] not in ("realms", "roles", "clients", "client_scopes", "client_roles")
    ]


def _ago(**delta: float) -> str:
    return (datetime.now(UTC) - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


async def test_a_first_round_writes_realms_roles_clients_and_secrets_and_reports_each(world: World) -> None:
    delay, calls, writes = await world.round(KC_URL)
    assert delay is None
    # The orphan goes before anything is created; the realms, then each realm's roles, clients and Secrets.
    assert _writing(calls) == [
        ("delete_realm", "ghost"),
        ("create_realm", "main"),
        ("create_realm", "other"),
        ("create_client", "main"),
        ("create_client", "main"),
        ("client_secret", "main"),
    ]
    created = next(c[3] for c in calls if c[1:3] == ("create_realm", "main"))
    assert [r["name"] for r in created["roles"]["realm"]] == ["admin", "viewer"]
    assert {c[0] for c in calls} == {"kc-admin"}  # the server's own admin acts for every namespace
    assert [w[1:4] for w in writes if w[0] == "patch"] == [
        (names.REALM_KIND, "team-a", "main"),
        (names.REALM_KIND, "team-b", "other"),
        (names.CLIENT_KIND, "team-a", "web"),
        (names.CLIENT_KIND, "team-b", "spa"),
        (names.CLIENT_KIND, "team-c", "intruder"),
    ]
    [secret] = [w[4] for w in writes if w[0] == "apply"]
    assert secret["metadata"]["name"] == "web-client-secret"
    assert secret["metadata"]["ownerReferences"][0]["uid"] == "uid-team-a-web"
    assert base64.b64decode(secret["data"]["clientSecret"]).decode() == "secret-of-id-1"
    assert _phases(writes) == {
        "team-a/lost": "Pending",
        "team-a/main": "Ready",
        "team-b/other": "Ready",
        "team-a/onlost": "Pending",
        "team-a/stray": "Pending",
        "team-a/web": "Ready",
        "team-b/spa": "Ready",
        "team-c/intruder": "Forbidden",
    }
    events = _events(writes)
    assert (
        names.CLIENT_KIND,
        "web",
        "Normal",
        "SecretWritten",
        "client secret written to Secret web-client-secret",
    ) in events
    assert [e[3] for e in events if e[1] == "intruder"] == ["NamespaceNotAllowed"]
    assert ("replication_write", names.REALM_KIND, "delete") in world.metrics
    assert ("resource_result", names.CLIENT_KIND, True) in world.metrics


async def test_a_quiet_round_writes_nothing_anywhere(world: World) -> None:
    await world.round(KC_URL)
    delay, calls, writes = await world.round(KC_URL)
    assert delay is None
    assert _writing(calls) == [] and writes == []


async def test_hand_edits_are_repaired_and_a_failed_write_stays_on_its_client(world: World) -> None:
    await world.round(KC_URL)
    web = next(c for c in world.server.clients["main"].values() if c["clientId"] == "web")
    web["redirectUris"] = ["https://evil/*"]
    main = world.obj(names.REALM_KIND, "team-a", "main")
    main["spec"]["roles"] = [{"name": "admin", "description": "everything"}, {"name": "offline_access"}]
    main["metadata"]["generation"] = 2
    world.server.failing.add("broken")
    world.kube.add(_client("team-a", "broken", {"name": "main"}))
    world.delete(names.CLIENT_KIND, "team-b", "spa")

    delay, calls, writes = await world.round(KC_URL)
    assert delay == 10.0  # a write failed: retried soon
    assert _writing(calls) == [
        ("update_realm", "main"),
        ("update_role", "main"),
        ("delete_role", "main"),
        ("delete_client", "main"),  # before the upserts
        ("create_client", "main"),
        ("update_client", "main"),
        ("client_secret", "main"),  # the client was written: its secret is read again
    ]
    events = _events(writes)
    assert (
        names.REALM_KIND,
        "main",
        "Warning",
        "RoleConflict",
        "roles not created by the operator: offline_access",
    ) in events
    assert (names.REALM_KIND, "main", "Normal", "RolesSynced", "realm roles written: admin, viewer") in events
    assert (
        names.CLIENT_KIND,
        "web",
        "Normal",
        "DriftRepaired",
        "restored fields edited in Keycloak: redirectUris",
    ) in events
    assert (names.CLIENT_KIND, "broken", "Warning", "WriteFailed", "create client broken: 500") in events
    assert (names.CLIENT_KIND, "spa", "Normal", "Deleted", "deleted from Keycloak (id-2)") in events
    assert _phases(writes)["team-a/broken"] == "Error"
    assert (names.CLIENT_KIND, "team-b", "spa") not in world.kube.objects  # its finalizer went


async def test_a_realm_with_declared_clients_waits_and_a_preserved_client_is_released(world: World) -> None:
    await world.round(KC_URL)
    world.delete(names.REALM_KIND, "team-a", "main")
    web = world.obj(names.CLIENT_KIND, "team-a", "web")
    web["metadata"]["annotations"] = {names.ANNOTATION_PRESERVE: "true"}
    world.delete(names.CLIENT_KIND, "team-a", "web")
    world.delete(names.REALM_KIND, "team-b", "other")

    _, calls, writes = await world.round(KC_URL)
    assert _writing(calls) == [("delete_realm", "other"), ("update_client", "main")]
    released = next(c[4] for c in calls if c[1] == "update_client")
    assert read_marker(released["attributes"]) is None
    assert _phases(writes) == {"team-a/main": "Deleting"}
    assert (names.CLIENT_KIND, "web", "Normal", "Released", "left in Keycloak, no longer managed") in _events(
        writes
    )
    assert (names.REALM_KIND, "team-b", "other") not in world.kube.objects
    assert (names.CLIENT_KIND, "team-a", "web") not in world.kube.objects


async def test_a_forbidden_namespace_is_disabled_after_the_grace_then_deleted(world: World) -> None:
    world.replicator.revocation_grace = timedelta(hours=1)
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["clientNamespaces"] = ["team-b", "team-c"]
    await world.round(KC_URL)
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["clientNamespaces"] = ["team-b"]
    _, calls, writes = await world.round(KC_URL)
    assert _writing(calls) == [] and _phases(writes) == {"team-c/intruder": "Forbidden"}
    intruder = world.obj(names.CLIENT_KIND, "team-c", "intruder")
    assert intruder["status"]["forbiddenSince"]  # the revocation clock starts

    intruder["status"]["forbiddenSince"] = _ago(hours=1.5)
    _, calls, writes = await world.round(KC_URL)
    assert _writing(calls) == [("update_client", "main")]
    assert next(c[4] for c in calls if c[1] == "update_client")["enabled"] is False
    assert [e[3] for e in _events(writes)] == ["Revoked"]

    intruder["status"]["forbiddenSince"] = _ago(hours=3)
    _, calls, writes = await world.round(KC_URL)
    assert _writing(calls) == [("delete_client", "main")]
    assert [e[3] for e in _events(writes)] == ["Deleted"]


async def test_an_external_server_that_refuses_the_login_is_retried_later_and_later(world: World) -> None:
    delays = []
    for _ in range(4):
        delay = (await world.round(EXT_URL))[0]
        delays.append(delay)
        world.now += delay or 0.0  # the retry comes when asked
    assert delays == [10.0, 20.0, 40.0, 80.0]
    assert world.server.calls == []
    status = world.obj(names.REALM_KIND, "team-x", "ext")["status"]
    assert status["phase"] == "Error" and status["conditions"][0]["reason"] == "AdminLoginFailed"
    # Within the delay, a resync does not hurry it.
    await world.round(EXT_URL)
    world.now += 1.0
    assert await world.round(EXT_URL) == (None, [], [])


async def test_a_round_that_runs_out_its_budget_says_so_on_the_servers_realms_and_backs_off(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Keycloak this operator runs (any namespace may create one) that answers slowly enough: the round is
    cut at its budget, whatever each request's deadline, and the next one waits longer each time."""
    world.replicator.round_budget = 0.05

    async def never(*_: Any) -> list[Obj]:
        await asyncio.Event().wait()
        return []

    monkeypatch.setattr(FakeAdmin, "clients", never)
    delays = []
    for _ in range(5):
        delays.append((await world.round(KC_URL))[0])
        # Within the delay, a resync or an event costs the server nothing.
        assert await world.round(KC_URL) == (None, [], [])
        world.now += delays[-1] or 0.0
    assert delays == [10.0, 20.0, 40.0, 60.0, 60.0]  # MAX_OWN_RETRY_S: one resync at most
    for name, ns in (("main", "team-a"), ("other", "team-b")):
        status = world.obj(names.REALM_KIND, ns, name)["status"]
        assert status["phase"] == "Error"
        condition = status["conditions"][0]
        assert condition["reason"] == "RoundBudgetExceeded"
        assert "budget of 0.05 s (KCOP_ROUND_BUDGET_SECONDS)" in condition["message"]
    web = world.obj(names.CLIENT_KIND, "team-a", "web")["status"]
    assert web["phase"] == "Pending" and "budget" in web["conditions"][0]["message"]
    # Once it answers again, the round converges.
    monkeypatch.undo()
    assert (await world.round(KC_URL))[0] is None
    assert world.obj(names.REALM_KIND, "team-a", "main")["status"]["phase"] == "Ready"


async def test_an_operator_run_keycloak_with_unusable_answers_backs_off(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def malformed(self: FakeAdmin) -> list[Obj]:
        self.unusable = True  # as KeycloakAdmin does for an answer refused as oversize or not JSON
        raise AdminError(0, "GET admin/realms: the answer is not JSON")

    monkeypatch.setattr(FakeAdmin, "realms", malformed)
    delays = []
    for _ in range(3):
        delay = (await world.round(KC_URL))[0]
        delays.append(delay)
        world.now += delay or 0.0
    assert delays == [10.0, 20.0, 40.0]


async def test_resources_that_name_no_server_are_reported_by_the_round_without_one(world: World) -> None:
    delay, calls, writes = await world.round("")
    assert delay is None and calls == []
    assert _phases(writes) == {
        "team-a/lost": "Pending",
        "team-a/onlost": "Pending",
        "team-a/stray": "Pending",
    }


# --- a realm's SMTP password, from a Secret of its own namespace ------------------------------------------

SMTP = {
    "host": "smtp.example.com",
    "from": "sso@example.com",
    "auth": {"user": "mailer", "passwordSecret": {"name": "smtp", "key": "password"}},
}


def _smtp_secret(world: World, ns: str, password: str) -> None:
    meta = {"namespace": ns, "name": "smtp"}
    world.kube.add(
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {"password": _b64(password)}}
    )


def _leaks(password: str, writes: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Kubernetes writes (statuses, events, Secrets) that carry the password, in clear or base64."""
    return [w for w in writes if password in repr(w) or _b64(password) in repr(w)]


async def test_the_smtp_password_goes_only_into_its_realms_put_and_a_changed_secret_is_sent_again(
    world: World,
) -> None:
    world.obj(names.REALM_KIND, "team-b", "other")["spec"]["smtp"] = SMTP
    _smtp_secret(world, "team-b", "s3cret-one")
    _smtp_secret(world, "team-a", "not-this-one")  # the Keycloak's namespace: never read for team-b's realm
    _, calls, writes = await world.round(KC_URL)
    created = next(c for c in calls if c[1:3] == ("create_realm", "other"))
    assert created[3]["smtpServer"]["password"] == "s3cret-one"
    assert "smtpPasswordSource" not in created[3]
    assert not _leaks("s3cret-one", writes)
    assert _phases(writes)["team-b/other"] == "Ready"

    _, calls, writes = await world.round(KC_URL)
    assert _writing(calls) == [] and writes == []  # steady: the masked password is in step

    _smtp_secret(world, "team-b", "s3cret-two")  # a new resourceVersion
    _, calls, writes = await world.round(KC_URL)
    assert [c[1:3] for c in calls if c[1] == "update_realm"] == [("update_realm", "other")]
    assert world.server.realms["other"]["smtpServer"]["password"] == "s3cret-two"
    assert not _leaks("s3cret-two", writes) and not _leaks("s3cret-one", writes)

    _, calls, writes = await world.round(KC_URL)
    assert _writing(calls) == [] and writes == []


async def test_a_missing_smtp_secret_holds_its_own_realm_only_with_a_condition_naming_the_field(
    world: World,
) -> None:
    world.obj(names.REALM_KIND, "team-b", "other")["spec"]["smtp"] = SMTP
    _smtp_secret(world, "team-a", "elsewhere")  # same name in another namespace: not the realm's
    _, calls, writes = await world.round(KC_URL)
    assert ("create_realm", "other") not in _writing(calls)
    assert ("create_realm", "main") in _writing(calls)  # the other realms go on
    status = world.obj(names.REALM_KIND, "team-b", "other")["status"]
    assert status["phase"] == "Pending"
    message = status["conditions"][0]["message"]
    assert "spec.smtp.auth.passwordSecret" in message and "team-b/smtp" in message
    assert not _leaks("elsewhere", writes)

    _smtp_secret(world, "team-b", "now-here")
    _, calls, _ = await world.round(KC_URL)
    assert ("create_realm", "other") in _writing(calls)
    assert world.server.realms["other"]["smtpServer"]["password"] == "now-here"


def _format_record(world: World, realm: str) -> Any:
    return (world.server.realms[realm].get("attributes") or {}).get(ATTR_FORMAT)


async def test_the_stored_format_waits_for_every_replica_then_is_recorded_once_per_owned_realm(
    world: World,
) -> None:
    fmt = [1]  # what every live replica supports, as shell/leadership.py would say
    world.replicator.realms.format_in_effect = lambda: fmt[0]
    widget = marked({"realm": "widgets"}, ObjectKey("KeycloakWidget", "team-a", "w"))["attributes"]
    world.server.realm({"realm": "widgets", "attributes": widget})  # a kind of a newer replica's
    _, calls, _ = await world.round(KC_URL)
    assert ("create_realm", "main") in _writing(calls)
    assert _format_record(world, "main") is None  # an old replica is alive: the old format is written
    _, calls, writes = await world.round(KC_URL)
    assert _writing(calls) == [] and writes == []

    fmt[0] = 2  # the old replica is gone
    other_attributes = dict(world.server.realms["other"]["attributes"])
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["displayName"] = "Main"
    _, calls, _ = await world.round(KC_URL)
    migrated = [c[2:] for c in calls if c[1] == "update_realm"]
    # main's update keeps the record it has (none: only a migration moves a record, or a later format's
    # step would be skipped); other gets its record in a write of its own, which sends the realm's
    # attributes back with it (Keycloak replaces them all); main, written this round, gets it next round
    assert [(name, body["attributes"].get(ATTR_FORMAT)) for name, body in migrated] == [
        ("main", None),
        ("other", "2"),
    ]
    assert migrated[1][1] == {"attributes": {**other_attributes, ATTR_FORMAT: "2"}}
    main_attributes = dict(world.server.realms["main"]["attributes"])
    _, calls, _ = await world.round(KC_URL)
    assert [c[2:] for c in calls if c[1] == "update_realm"] == [
        ("main", {"attributes": {**main_attributes, ATTR_FORMAT: "2"}})
    ]
    assert read_marker(world.server.realms["main"]["attributes"]) is not None
    assert read_marker(world.server.realms["other"]["attributes"]) is not None
    assert world.server.realms["widgets"]["attributes"] == widget  # never touched
    for _ in range(2):  # finished: never run again
        _, calls, writes = await world.round(KC_URL)
        assert _writing(calls) == [] and writes == []

    world.obj(names.REALM_KIND, "team-b", "other")["metadata"]["deletionTimestamp"] = "2026-01-02T00:00:00Z"
    world.kube.add(_realm("team-b", "later", ON_KC))
    _, calls, _ = await world.round(KC_URL)
    created = next(c[3] for c in calls if c[1:3] == ("create_realm", "later"))
    assert created["attributes"][ATTR_FORMAT] == "2"  # born in the new format: nothing to migrate
    assert [c[1:3] for c in calls if c[1] == "update_realm"] == []


async def test_realm_updates_and_releases_keep_the_attributes_set_by_hand(world: World) -> None:
    # Keycloak's realm PUT with `attributes` removes every attribute not sent (the fake does the same).
    await world.round(KC_URL)
    for name in ("main", "other"):
        world.server.realms[name]["attributes"]["frontendUrl"] = f"https://{name}.example"
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["displayName"] = "Main"
    other = world.obj(names.REALM_KIND, "team-b", "other")
    other["metadata"]["annotations"] = {names.ANNOTATION_PRESERVE: "true"}
    world.delete(names.REALM_KIND, "team-b", "other")
    _, calls, _ = await world.round(KC_URL)
    assert ("update_realm", "main") in _writing(calls) and ("update_realm", "other") in _writing(calls)
    main = world.server.realms["main"]["attributes"]
    assert main["frontendUrl"] == "https://main.example" and read_marker(main) is not None
    assert main[ATTR_FORMAT] == "2"
    assert world.server.realms["other"]["attributes"] == {"frontendUrl": "https://other.example"}


async def test_a_listing_entry_that_is_not_an_object_stalls_no_realm(world: World) -> None:
    world.replicator.realms.format_in_effect = lambda: 2
    world.server.realms["junk"] = ["not", "a", "realm"]  # type: ignore[assignment]
    _, calls, _ = await world.round(KC_URL)
    assert ("create_realm", "main") in _writing(calls) and ("create_realm", "other") in _writing(calls)
    assert _format_record(world, "main") == "2"


async def test_without_a_format_every_replica_shares_nothing_is_migrated_nor_recorded(world: World) -> None:
    world.replicator.realms.format_in_effect = lambda: None
    _, calls, _ = await world.round(KC_URL)
    assert ("create_realm", "main") in _writing(calls)
    assert _format_record(world, "main") is None
    world.server.realms["main"]["attributes"][ATTR_FORMAT] = "3"  # a newer replica's record: kept
    world.obj(names.REALM_KIND, "team-a", "main")["spec"]["displayName"] = "Main"
    _, calls, _ = await world.round(KC_URL)
    assert [c[1:3] for c in calls if c[1] == "update_realm"] == [("update_realm", "main")]
    assert _format_record(world, "main") == "3"
