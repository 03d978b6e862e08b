"""An in-memory Keycloak's authentication flows, behind the AuthenticationFlowAdmin the writer uses, for the
round tests (test_authentication_flow_round.py). It behaves as Keycloak 26.7.3 does where the operator depends
on it: a POSTed flow keeps its id; executions are added at the end of their flow, DISABLED; the listing is
depth-first with levels, a subflow's row naming its flow (`flowId`); deleting a subflow's execution deletes
the subflow; a flow or subflow is renamed by a PUT of its id; a flow or config alias is unique in the realm
(409); the realm binds flows by id (so a rename keeps the binding; the realm reads back their aliases); a
flow bound by the realm or named by an identity provider (`providers`: the realm's, as the provider fake holds
them) cannot be deleted (a 500, as Keycloak answers: RealmAdapter.removeAuthenticationFlow refuses a flow
KeycloakModelUtils.isFlowUsed finds, which asks the providers too; read in 26.7.3's bytecode); built-in flows
exist in every realm.
`after_write`, when set, is called after every write: a test checks an invariant at each intermediate
state."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable
from typing import Any

from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin

Obj = dict[str, Any]
USES = ("firstBrokerLoginFlowAlias", "postBrokerLoginFlowAlias")  # a provider's fields naming a flow
BUILT_INS = ("browser", "direct grant", "registration", "reset credentials", "clients", "first broker login")
WRITES = (
    "create_flow",
    "update_flow",
    "delete_flow",
    "add",
    "requirement",
    "config",
    "update_config",
    "delete_exec",
    "bind",
)


class FlowServer:
    def __init__(self) -> None:
        self.flows: dict[str, dict[str, Obj]] = {}  # realm -> id -> flow (with "children": executions)
        self.realms: dict[str, Obj] = {}  # realm -> binding field -> flow id
        self.attributes: dict[str, dict[str, str]] = {}  # realm -> its attributes
        self.configs: dict[str, Obj] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.failing: set[str] = set()  # aliases whose creation is refused
        self.unreadable = False  # the flow listing answers 500
        self.after_write: Callable[[], None] | None = None
        self.providers: Callable[[str], Iterable[Obj]] = lambda realm: ()
        self._ids = itertools.count(1)

    def api(self, admin: KeycloakAdmin) -> FakeFlowAdmin:
        return FakeFlowAdmin(self)

    def realm(self, realm: str) -> dict[str, Obj]:
        if realm not in self.flows:
            self.flows[realm] = {}
            for alias in BUILT_INS:
                self._add_flow(realm, {"id": f"b-{realm}-{alias}", "alias": alias, "builtIn": True})
            self.realms[realm] = {
                "browserFlow": f"b-{realm}-browser",
                "directGrantFlow": f"b-{realm}-direct grant",
            }
        return self.flows[realm]

    def bindings(self, realm: str) -> dict[str, Any]:
        """The realm as Keycloak returns it: its bindings by the bound flow's alias, and its attributes."""
        flows = self.realm(realm)
        found: dict[str, Any] = {k: flows[v]["alias"] for k, v in self.realms[realm].items() if v in flows}
        return {**found, "attributes": dict(self.attributes.get(realm, {}))}

    def put_realm(self, realm: str, body: Obj) -> None:
        """As Keycloak 26.7.3's realm PUT: attributes sent replace the realm's; without any, its CIBA and PAR
        settings go back to their defaults (shown here as gone)."""
        attributes = self.attributes.get(realm, {})
        if "attributes" in body:
            self.attributes[realm] = dict(body["attributes"])
        else:
            reset = ("ciba", "par")
            self.attributes[realm] = {k: v for k, v in attributes.items() if not k.startswith(reset)}
        bound = {k: v for k, v in body.items() if k != "attributes"}
        self.realms[realm].update({k: self.by_alias(realm, v)["id"] for k, v in bound.items()})
        self.wrote("bind", realm, bound)

    def wrote(self, *call: Any) -> None:
        self.calls.append(call)
        if self.after_write is not None:
            self.after_write()

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
            if "subflow" in e:
                sub = self.realm(realm)[e["subflow"]]
                row.update(displayName=sub["alias"], flowId=sub["id"], description=sub.get("description", ""))
            out.append({**row, "level": level, "index": index})
            if "subflow" in e:
                out.extend(self.listing(realm, self.realm(realm)[e["subflow"]], level + 1))
        return out

    def alias_taken(self, realm: str, alias: str, but: str = "") -> None:
        if any(f["alias"] == alias and f["id"] != but for f in self.realm(realm).values()):
            raise AdminError(409, f"Flow alias name already exists: {alias}")

    def _drop(self, realm: str, execution: Obj) -> None:
        if "subflow" in execution:
            sub = self.realm(realm).pop(execution["subflow"])
            for e in sub["children"]:
                self._drop(realm, e)
        self.configs.pop(execution.get("authenticationConfig", ""), None)


class FakeFlowAdmin:
    def __init__(self, server: FlowServer) -> None:
        self.s = server

    async def flows(self, realm: str) -> list[Obj]:
        self.s.calls.append(("flows", realm))
        if self.s.unreadable:
            raise AdminError(500, "flows: 500")
        return [
            {k: v for k, v in f.items() if k != "children"}
            for f in self.s.realm(realm).values()
            if f["topLevel"]
        ]

    async def create_flow(self, realm: str, body: Obj) -> str:
        if body["alias"] in self.s.failing:
            raise AdminError(500, f"create flow {body['alias']}: 500")
        self.s._add_flow(realm, copy.deepcopy(body))
        self.s.wrote("create_flow", realm, body["alias"])
        return str(body["id"])

    async def update_flow(self, realm: str, flow_id: str, body: Obj) -> None:
        flow = self.s.realm(realm)[flow_id]
        self.s.alias_taken(realm, body["alias"], but=flow_id)
        flow.update({k: v for k, v in body.items() if k != "id"})
        self.s.wrote("update_flow", realm, body["alias"])

    async def delete_flow(self, realm: str, flow_id: str) -> None:
        flow = self.s.realm(realm)[flow_id]
        used = any(p.get(f) == flow["alias"] for p in self.s.providers(realm) for f in USES)
        if flow_id in self.s.realms[realm].values() or used or flow["alias"] in self.s.failing:
            raise AdminError(500, "unknown_error")
        for e in flow["children"]:
            self.s._drop(realm, e)
        del self.s.realm(realm)[flow_id]
        self.s.wrote("delete_flow", realm, flow_id)

    async def executions(self, realm: str, alias: str) -> list[Obj]:
        self.s.calls.append(("executions", realm, alias))
        return copy.deepcopy(self.s.listing(realm, self.s.by_alias(realm, alias)))

    async def config(self, realm: str, config_id: str) -> Obj:
        return copy.deepcopy(self.s.configs[config_id])

    async def add_authenticator(self, realm: str, parent: str, provider: str) -> None:
        e = {"id": f"e{next(self.s._ids)}", "providerId": provider, "requirement": "DISABLED"}
        self.s.by_alias(realm, parent)["children"].append(e)
        self.s.wrote("add", realm, parent, provider)

    async def add_subflow(self, realm: str, parent: str, step: Obj) -> None:
        sub = self.s._add_flow(
            realm, {"id": f"f{next(self.s._ids)}", "alias": step["subflow"], "topLevel": False}
        )
        sub["description"] = step.get("description", "")
        e = {"id": f"e{next(self.s._ids)}", "authenticationFlow": True, "requirement": "DISABLED"}
        self.s.by_alias(realm, parent)["children"].append({**e, "subflow": sub["id"]})
        self.s.wrote("add", realm, parent, step["subflow"])

    def _find(self, realm: str, execution_id: str) -> tuple[Obj, Obj]:
        for flow in self.s.realm(realm).values():
            for e in flow["children"]:
                if e["id"] == execution_id:
                    return flow, e
        raise AdminError(404, f"execution {execution_id} not found")

    async def set_requirement(self, realm: str, alias: str, execution: Obj) -> None:
        self._find(realm, execution["id"])[1]["requirement"] = execution["requirement"]
        self.s.wrote("requirement", realm, execution["id"], execution["requirement"])

    async def add_config(self, realm: str, execution_id: str, body: Obj) -> None:
        if any(c["alias"] == body["alias"] for c in self.s.configs.values()):
            raise AdminError(409, f"config alias {body['alias']} already exists")
        config_id = f"c{next(self.s._ids)}"
        self.s.configs[config_id] = {"id": config_id, **copy.deepcopy(body)}
        self._find(realm, execution_id)[1]["authenticationConfig"] = config_id
        self.s.wrote("config", realm, execution_id)

    async def update_config(self, realm: str, config_id: str, body: Obj) -> None:
        if any(c["alias"] == body["alias"] and i != config_id for i, c in self.s.configs.items()):
            raise AdminError(409, f"config alias {body['alias']} already exists")
        self.s.configs[config_id].update(copy.deepcopy({k: v for k, v in body.items() if k != "id"}))
        self.s.wrote("update_config", realm, config_id)

    async def realm_bindings(self, realm: str) -> Obj:
        self.s.calls.append(("realm", realm))
        return self.s.bindings(realm)

    async def update_realm(self, realm: str, body: Obj) -> None:
        self.s.put_realm(realm, body)

    async def delete_execution(self, realm: str, execution_id: str) -> None:
        flow, e = self._find(realm, execution_id)
        flow["children"].remove(e)
        self.s._drop(realm, e)
        self.s.wrote("delete_exec", realm, execution_id)
