"""The group REST adapter (shell/admin/group.py) over a stub of KeycloakAdmin's raw calls: the tree read
level by level with every page asked for, entries without an id dropped, a server that never stops paging
cut off, and the paths and bodies of its writes."""

from __future__ import annotations

from typing import Any

import pytest

from keycloak_operator.shell.admin import group as kg
from keycloak_operator.shell.admin.connection import AdminError


class StubAdmin:
    def __init__(self, tree: dict[str, list[dict[str, Any]]], endless: bool = False) -> None:
        self.tree, self.endless = tree, endless  # path ("" for the top) -> its groups
        self.gone: set[str] = set()  # groups deleted by hand after their parent's list was read
        self.lists: list[tuple[str, dict[str, Any]]] = []
        self.sent: list[tuple[str, str, Any]] = []

    async def get_list(self, path: str, **params: Any) -> list[Any]:
        self.lists.append((path, params))
        first, size = int(params["first"]), int(params["max"])
        if self.endless:
            return [{"id": f"x{first + i}", "path": f"/x{first + i}"} for i in range(size)]
        parent = "" if path.endswith("/groups") else path.split("/")[-2]
        if parent in self.gone:
            raise AdminError(404, f"GET {path}: 404 Could not find group by id")
        return self.tree.get(parent, [])[first : first + size]

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> Any:
        self.sent.append((method, path, body))
        return {"id": path.rsplit("/", 1)[-1]} if method == "GET" else None

    async def create_at(self, path: str, body: dict[str, Any]) -> str:
        self.sent.append(("POST", path, body))
        return "new-id"


def _api(stub: StubAdmin) -> kg.GroupAdmin:
    return kg.GroupAdmin(stub)  # type: ignore[arg-type]


async def test_the_tree_is_read_level_by_level_every_page_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kg, "PAGE", 2)
    top = [
        {"id": "a", "path": "/a", "subGroupCount": 3},
        {"id": "b", "path": "/b"},
        "junk",
        {"path": "/no-id"},
    ]
    children = [{"id": f"a{i}", "path": f"/a/a{i}", "parentId": "a"} for i in range(3)]
    stub = StubAdmin({"": top, "a": children})
    found = await _api(stub).groups("main")
    assert [g["id"] for g in found] == ["a", "b", "a0", "a1", "a2"]
    assert [(p, q["first"]) for p, q in stub.lists] == [
        ("admin/realms/main/groups", "0"),
        ("admin/realms/main/groups", "2"),
        ("admin/realms/main/groups", "4"),
        ("admin/realms/main/groups/a/children", "0"),
        ("admin/realms/main/groups/a/children", "2"),
    ]
    assert all(q["briefRepresentation"] == "false" for _, q in stub.lists)  # attributes and mappings too


async def test_a_server_that_never_stops_paging_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kg, "MAX_GROUPS", 50)
    with pytest.raises(AdminError, match="more than 50 groups"):
        await _api(StubAdmin({}, endless=True)).groups("main")


async def test_a_group_deleted_between_two_reads_is_taken_as_gone_with_its_subtree() -> None:
    top = [{"id": "a", "path": "/a", "subGroupCount": 1}, {"id": "b", "path": "/b", "subGroupCount": 1}]
    stub = StubAdmin({"": top, "a": [{"id": "a0", "path": "/a/a0"}], "b": [{"id": "b0", "path": "/b/b0"}]})
    stub.gone.add("a")
    assert [g["id"] for g in await _api(stub).groups("main")] == ["a", "b", "b0"]


async def test_fewer_children_than_the_parent_counts_fail_the_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kg, "PAGE", 2)
    top = [{"id": "a", "path": "/a", "subGroupCount": 5}]
    children = [{"id": f"a{i}", "path": f"/a/a{i}", "parentId": "a"} for i in range(3)]  # a page cut short
    with pytest.raises(AdminError, match="3 of its 5 subgroups read"):
        await _api(StubAdmin({"": top, "a": children})).groups("main")


async def test_writes_go_to_the_group_endpoints() -> None:
    stub = StubAdmin({})
    api = _api(stub)
    assert await api.create("main", None, {"name": "a"}) == "new-id"
    await api.create("main", "p1", {"name": "b"})
    await api.move("main", "g1", "b", None)
    await api.write_mappings("main", "g1", None, True, [{"id": "r1", "name": "reader"}])
    await api.write_mappings("main", "g1", "c1", False, [{"id": "r2", "name": "view"}])
    await api.delete("main", "g1")
    assert stub.sent == [
        ("POST", "admin/realms/main/groups", {"name": "a"}),
        ("POST", "admin/realms/main/groups/p1/children", {"name": "b"}),
        ("POST", "admin/realms/main/groups", {"id": "g1", "name": "b"}),
        ("POST", "admin/realms/main/groups/g1/role-mappings/realm", [{"id": "r1", "name": "reader"}]),
        ("DELETE", "admin/realms/main/groups/g1/role-mappings/clients/c1", [{"id": "r2", "name": "view"}]),
        ("DELETE", "admin/realms/main/groups/g1", None),
    ]
    with pytest.raises(AdminError):
        await api.delete("main", "..")  # a path segment is never '.' or '..'
