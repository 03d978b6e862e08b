"""An in-memory Keycloak's identity providers and their mappers, behind the IdentityProviderAdmin the writer
uses, for the round tests (test_replication_round.World holds one). It behaves as Keycloak 26 does where the
operator depends on it: the client secret is returned masked and a masked one sent back keeps the stored
value; a PUT finds the provider by its internalId and replaces its config whole; a provider's mappers go
with it. Calls are recorded apart from the other admin calls, so tests of other kinds see none."""

from __future__ import annotations

import copy
from typing import Any

from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin

Obj = dict[str, Any]
MASK = "**********"


class IdpServer:
    def __init__(self) -> None:
        self.providers: dict[str, dict[str, Obj]] = {}  # realm -> alias -> provider (secret in clear)
        self.mappers: dict[str, dict[str, list[Obj]]] = {}  # realm -> alias -> mappers
        self.calls: list[tuple[Any, ...]] = []
        self.failing: set[str] = set()  # aliases whose writes are refused
        self.failing_mappers: set[str] = set()  # aliases whose mapper listing fails
        self.failing_list = False  # the providers' listing fails
        self._ids = 0

    def api(self, admin: KeycloakAdmin) -> FakeIdentityProviderAdmin:
        return FakeIdentityProviderAdmin(self)

    def realm(self, realm: str) -> dict[str, Obj]:
        return self.providers.setdefault(realm, {})

    def next_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}-{self._ids}"


def _masked(provider: Obj) -> Obj:
    out = copy.deepcopy(provider)
    if out["config"].get("clientSecret"):
        out["config"]["clientSecret"] = MASK
    return out


class FakeIdentityProviderAdmin:
    def __init__(self, server: IdpServer) -> None:
        self.server = server

    async def providers(self, realm: str) -> list[Obj]:
        self.server.calls.append(("providers", realm))
        if self.server.failing_list:
            raise AdminError(503, "identity providers: 503")
        return [_masked(p) for p in self.server.realm(realm).values()]

    async def get(self, realm: str, alias: str) -> Obj:
        self.server.calls.append(("get", realm, alias))
        return _masked(self.server.realm(realm)[alias])

    async def create(self, realm: str, body: Obj) -> str:
        alias = body["alias"]
        self.server.calls.append(("create", realm, alias, copy.deepcopy(body)))
        if alias in self.server.failing:
            raise AdminError(500, f"create identity provider {alias}: 500")
        if alias in self.server.realm(realm):
            raise AdminError(409, f"identity provider {alias} exists")
        stored = {**copy.deepcopy(body), "internalId": self.server.next_id("idp")}
        self.server.realm(realm)[alias] = stored
        return str(alias)

    async def update(self, realm: str, alias: str, body: Obj) -> None:
        self.server.calls.append(("update", realm, alias, copy.deepcopy(body)))
        if alias in self.server.failing or body["alias"] in self.server.failing:
            raise AdminError(500, f"update identity provider {alias}: 500")
        before = self.server.realm(realm)[alias]
        if body.get("internalId") not in (None, before["internalId"]):
            raise AdminError(400, "internalId does not match")
        config = copy.deepcopy(body.get("config") or {})
        if config.get("clientSecret") == MASK:  # as Keycloak does: the mask keeps the stored secret
            config["clientSecret"] = before["config"].get("clientSecret")
        del self.server.realm(realm)[alias]
        self.server.realm(realm)[body["alias"]] = {
            **copy.deepcopy(body),
            "config": config,
            "internalId": before["internalId"],
        }
        moved = self.server.mappers.setdefault(realm, {}).pop(alias, [])
        self.server.mappers[realm][body["alias"]] = moved

    async def delete(self, realm: str, alias: str) -> None:
        self.server.calls.append(("delete", realm, alias))
        del self.server.realm(realm)[alias]
        self.server.mappers.setdefault(realm, {}).pop(alias, None)

    async def mappers(self, realm: str, alias: str) -> list[Obj]:
        self.server.calls.append(("mappers", realm, alias))
        if alias in self.server.failing_mappers:
            raise AdminError(503, f"mappers of {alias}: 503")
        return copy.deepcopy(self.server.mappers.setdefault(realm, {}).get(alias, []))

    async def write_mapper(
        self, realm: str, alias: str, operation: str, mapper_id: str | None, body: Any
    ) -> None:
        found = self.server.mappers.setdefault(realm, {}).setdefault(alias, [])
        name = body["name"] if body else next(m["name"] for m in found if m["id"] == mapper_id)
        self.server.calls.append(("write_mapper", realm, alias, operation, name))
        if alias in self.server.failing:
            raise AdminError(500, f"mapper {name}: 500")
        kept = [m for m in found if m["name"] != name]
        if operation != "delete":  # Keycloak adds config keys of its own
            config = {**body["config"], "syncMode": body["config"].get("syncMode", "INHERIT")}
            kept.append(
                {**copy.deepcopy(body), "id": mapper_id or self.server.next_id("m"), "config": config}
            )
        self.server.mappers[realm][alias] = kept
