"""An in-memory Keycloak's authentication flows, behind the AuthenticationFlowApi the writer uses, for the
round tests (test_authentication_flow_round.py). It behaves as Keycloak 26.7.3 does where the operator depends
on it: a POSTed flow keeps its id; executions are added at the end of their flow, DISABLED; the listing is
depth-first with levels; deleting a subflow's execution deletes the subflow; a bound flow cannot be deleted
(a 500, as Keycloak answers); built-in flows exist in every realm."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from keycloak_operator.shell.keycloak_admin import AdminError, KeycloakAdmin

Obj = dict[str, Any]
BUILT_INS = ("browser", "direct grant", "registration", "reset credentials", "clients", "first broker login")
WRITES = ("create_flow", "update_flow", "delete_flow", "add", "requirement", "config", "delete_exec", "bind")


class FlowServer:
    def __init__(self) -> None:
        self.flows: dict[str, dict[str, Obj]] = {}  # realm -> id -> flow (with "children": executions)
        self.realms: dict[str, Obj] = {}  # realm -> bindings
        self.configs: dict[str, Obj] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.failing: set[str] = set()  # aliases whose creation is refused
        self._ids = itertools.count(1)

    def api(self, admin: KeycloakAdmin) -> FakeFlowApi:
        return FakeFlowApi(self)

    def realm(self, realm: str) -> dict[str, Obj]:
        if realm not in self.flows:
            self.flows[realm] = {}
            for alias in BUILT_INS:
                self._add_flow(realm, {"id": f"b-{realm}-{alias}", "alias": alias, "builtIn": True})
            self.realms[realm] = {"browserFlow": "browser", "directGrantFlow": "direct grant"}
        return self.flows[realm]

    def _add_flow(self, realm: str, body: Obj) -> Obj:
        if any(f["alias"] == body["alias"] for f in self.flows[realm].values()):
            raise AdminError(409, f"Flow {body['alias']} already exists")
        flow = {"providerId": "basic-flow", "topLevel": True, "builtIn": False, **body, "children": []}
        self.flows[realm][flow["id"]] = flow
        return flow

    def by_alias(self, realm: str, alias: str) -> Obj:
        found = [f for f in self.realm(realm).values() if f["alias"] == alias]
        if not found:
            raise AdminError(404, f"flow {alias} not found")
        return found[0]

    def writes(self) -> list[tuple[Any, ...]]:
        return [c for c in self.calls if c[0] in WRITES]

    def listing(self, realm: str, flow: Obj, level: int = 0) -> list[Obj]:
        out: list[Obj] = []
        for index, e in enumerate(flow["children"]):
            row = {k: v for k, v in e.items() if k != "subflow"}
            out.append({**row, "level": level, "index": index})
            if "subflow" in e:
                out.extend(self.listing(realm, self.realm(realm)[e["subflow"]], level + 1))
        return out

    def _drop(self, realm: str, execution: Obj) -> None:
        if "subflow" in execution:
            sub = self.realm(realm).pop(execution["subflow"])
            for e in sub["children"]:
                self._drop(realm, e)
        self.configs.pop(execution.get("authenticationConfig", ""), None)


class FakeFlowApi:
    def __init__(self, server: FlowServer) -> None:
        self.s = server

    async def flows(self, realm: str) -> list[Obj]:
        self.s.calls.append(("flows", realm))
        return [
            {k: v for k, v in f.items() if k != "children"}
            for f in self.s.realm(realm).values()
            if f["topLevel"]
        ]

    async def create_flow(self, realm: str, body: Obj) -> str:
        self.s.calls.append(("create_flow", realm, body["alias"]))
        if body["alias"] in self.s.failing:
            raise AdminError(500, f"create flow {body['alias']}: 500")
        self.s._add_flow(realm, copy.deepcopy(body))
        return str(body["id"])

    async def update_flow(self, realm: str, flow_id: str, body: Obj) -> None:
        self.s.calls.append(("update_flow", realm, body["alias"]))
        flow = self.s.realm(realm)[flow_id]
        flow.update({k: v for k, v in body.items() if k != "id"})

    async def delete_flow(self, realm: str, flow_id: str) -> None:
        self.s.calls.append(("delete_flow", realm, flow_id))
        flow = self.s.realm(realm)[flow_id]
        if flow["alias"] in self.s.realms[realm].values():
            raise AdminError(500, "unknown_error")
        for e in flow["children"]:
            self.s._drop(realm, e)
        del self.s.realm(realm)[flow_id]

    async def executions(self, realm: str, alias: str) -> list[Obj]:
        self.s.calls.append(("executions", realm, alias))
        return copy.deepcopy(self.s.listing(realm, self.s.by_alias(realm, alias)))

    async def config(self, realm: str, config_id: str) -> Obj:
        return copy.deepcopy(self.s.configs[config_id])

    async def add_authenticator(self, realm: str, parent: str, provider: str) -> None:
        self.s.calls.append(("add", realm, parent, provider))
        e = {"id": f"e{next(self.s._ids)}", "providerId": provider, "requirement": "DISABLED"}
        self.s.by_alias(realm, parent)["children"].append(e)

    async def add_subflow(self, realm: str, parent: str, step: Obj) -> None:
        self.s.calls.append(("add", realm, parent, step["subflow"]))
        sub = self.s._add_flow(
            realm, {"id": f"f{next(self.s._ids)}", "alias": step["subflow"], "topLevel": False}
        )
        e = {
            "id": f"e{next(self.s._ids)}",
            "displayName": step["subflow"],
            "description": step.get("description", ""),
            "authenticationFlow": True,
            "requirement": "DISABLED",
            "subflow": sub["id"],
        }
        self.s.by_alias(realm, parent)["children"].append(e)

    def _find(self, realm: str, execution_id: str) -> tuple[Obj, Obj]:
        for flow in self.s.realm(realm).values():
            for e in flow["children"]:
                if e["id"] == execution_id:
                    return flow, e
        raise AdminError(404, f"execution {execution_id} not found")

    async def set_requirement(self, realm: str, alias: str, execution: Obj) -> None:
        self.s.calls.append(("requirement", realm, execution["id"], execution["requirement"]))
        self._find(realm, execution["id"])[1]["requirement"] = execution["requirement"]

    async def add_config(self, realm: str, execution_id: str, body: Obj) -> None:
        self.s.calls.append(("config", realm, execution_id))
        config_id = f"c{next(self.s._ids)}"
        self.s.configs[config_id] = {"id": config_id, **copy.deepcopy(body)}
        self._find(realm, execution_id)[1]["authenticationConfig"] = config_id

    async def realm_bindings(self, realm: str) -> Obj:
        self.s.realm(realm)
        return dict(self.s.realms[realm])

    async def update_realm(self, realm: str, body: Obj) -> None:
        self.s.calls.append(("bind", realm, dict(body)))
        self.s.realms[realm].update(body)

    async def delete_execution(self, realm: str, execution_id: str) -> None:
        self.s.calls.append(("delete_exec", realm, execution_id))
        flow, e = self._find(realm, execution_id)
        flow["children"].remove(e)
        self.s._drop(realm, e)
