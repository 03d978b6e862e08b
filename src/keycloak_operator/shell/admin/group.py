"""The admin REST API's group calls (core/replication/group.py plans them), on the admin connection's
deadlines, size caps and write count (admin/connection.py). Apart from admin/keycloak.py so that each kind's
calls stay small.

Keycloak lists only the top level of a realm's groups, each with a count of its subgroups, and pages a
group's children (ten by default): the tree is read level by level, every page asked for explicitly, with a
cap on the total so that a hostile server cannot keep a round reading forever. A group's children read are
checked against its subGroupCount: fewer (a page cut short, say) fails the read, never a plan that would
take a group missing from it for absent. A group deleted by hand between two reads (its children's list
answers 404) is taken as gone with its subtree; the next round reads the tree again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from keycloak_operator.shell.admin.connection import AdminConnection, AdminError

_q = AdminConnection.segment

PAGE: Final = 500
MAX_GROUPS: Final = 20_000  # a realm's groups read in one round; more is refused, never half-diffed


class GroupAdmin:
    def __init__(self, admin: AdminConnection) -> None:
        self.admin = admin

    @staticmethod
    def _groups(realm: str) -> str:
        return f"admin/realms/{_q(realm)}/groups"

    async def _paged(self, path: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        first = 0
        while True:
            page = await self.admin.get_list(
                path, briefRepresentation="false", first=str(first), max=str(PAGE)
            )
            first += len(page)
            out.extend(g for g in page if isinstance(g, dict) and isinstance(g.get("id"), str))
            if len(page) < PAGE:
                return out
            if first > MAX_GROUPS:
                raise AdminError(0, f"GET {path}: more than {MAX_GROUPS} groups")

    async def groups(self, realm: str) -> list[dict[str, Any]]:
        """Every group of the realm, the tree flattened (each with its `path`, and `parentId` below the top),
        attributes and direct role mappings included."""
        out: list[dict[str, Any]] = []
        level = await self._paged(self._groups(realm))
        seen: set[str] = set()
        while level:
            out.extend(g for g in level if g["id"] not in seen)
            seen.update(g["id"] for g in level)
            if len(out) > MAX_GROUPS:
                raise AdminError(0, f"{realm}: more than {MAX_GROUPS} groups")
            below: list[dict[str, Any]] = []
            for g in level:
                if g.get("subGroupCount") or g.get("subGroups"):
                    below.extend(await self._children(realm, g))
            level = [g for g in below if g["id"] not in seen]
        return out

    async def _children(self, realm: str, parent: dict[str, Any]) -> list[dict[str, Any]]:
        try:
            found = await self._paged(f"{self._groups(realm)}/{_q(parent['id'])}/children")
        except AdminError as e:
            if e.status == 404:  # deleted since its parent's list was read: gone, subtree and all
                return []
            raise
        count = parent.get("subGroupCount")
        if isinstance(count, int) and len(found) < count:
            raise AdminError(
                0,
                f"group {parent.get('path')}: {len(found)} of its {count} subgroups read; read again soon",
            )
        return found

    async def group(self, realm: str, group_id: str) -> dict[str, Any]:
        answer = await self.admin.request("GET", f"{self._groups(realm)}/{_q(group_id)}")
        if not isinstance(answer, dict):
            raise AdminError(0, f"group {group_id}: expected an object")
        return answer

    async def create(self, realm: str, parent_id: str | None, body: dict[str, Any]) -> str:
        """The new group's id; under `parent_id`, or at the top."""
        base = self._groups(realm)
        return await self.admin.create_at(f"{base}/{_q(parent_id)}/children" if parent_id else base, body)

    async def update(self, realm: str, group_id: str, body: dict[str, Any]) -> None:
        await self.admin.request("PUT", f"{self._groups(realm)}/{_q(group_id)}", body)

    async def move(self, realm: str, group_id: str, name: str, parent_id: str | None) -> None:
        """A POST naming an existing group's id moves it there (under `parent_id`, or to the top)."""
        base = self._groups(realm)
        path = f"{base}/{_q(parent_id)}/children" if parent_id else base
        await self.admin.request("POST", path, {"id": group_id, "name": name})

    async def delete(self, realm: str, group_id: str) -> None:
        await self.admin.request("DELETE", f"{self._groups(realm)}/{_q(group_id)}")

    async def write_mappings(
        self, realm: str, group_id: str, client_uuid: str | None, add: bool, roles: Sequence[dict[str, Any]]
    ) -> None:
        """Maps (`add`) or unmaps role representations (id and name) of the realm, or of one client."""
        path = f"{self._groups(realm)}/{_q(group_id)}/role-mappings/"
        path += "realm" if client_uuid is None else f"clients/{_q(client_uuid)}"
        await self.admin.request("POST" if add else "DELETE", path, list(roles))
