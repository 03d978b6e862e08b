"""The operator's own client in `master`, through the admin API: made or repaired (with the bootstrap admin),
and its secret changed during a rotation (with the client itself). What it must be is
core/operator_login.py's; this only reads and writes (ADR 0023)."""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import operator_login
from keycloak_operator.shell.admin.connection import AdminConnection, AdminError

_CLIENTS = f"admin/realms/{operator_login.REALM}/clients"


async def _find(admin: AdminConnection, client_id: str) -> dict[str, Any] | None:
    found = await admin.get_list(_CLIENTS, clientId=client_id)
    matches = [c for c in found if isinstance(c, dict) and c.get("clientId") == client_id]
    if not matches:
        return None
    client = matches[0]
    if not operator_login.is_ours(client):
        raise AdminError(
            0,
            f"client {client_id} in realm master was not made by the operator (no attribute "
            f"{operator_login.MARKER_ATTRIBUTE}): it is left alone; delete or rename it",
        )
    return client


async def ensure_client(admin: AdminConnection, client_id: str, secret: str) -> str:
    """The client as it must be, with `secret`, and master's admin role on its service account: "created"
    or "repaired". `admin`: the bootstrap admin (the client itself could not log in)."""
    held_back = operator_login.representation(client_id, secret, enabled=False)
    client = await _find(admin, client_id)
    if client is None:
        uuid = await admin.create_at(_CLIENTS, held_back)
        done = "created"
    else:
        uuid = str(client["id"])
        await admin.request("PUT", f"{_CLIENTS}/{admin.segment(uuid)}", held_back)
        done = "repaired"
    user = await admin.request("GET", f"{_CLIENTS}/{admin.segment(uuid)}/service-account-user")
    if not isinstance(user, dict) or not isinstance(user.get("id"), str):
        raise AdminError(0, f"client {client_id} in realm master: no service-account user")
    mappings = f"admin/realms/{operator_login.REALM}/users/{admin.segment(user['id'])}/role-mappings/realm"
    if not operator_login.holds_admin(await admin.get_list(mappings)):
        role = await admin.request(
            "GET", f"admin/realms/{operator_login.REALM}/roles/{operator_login.ADMIN_ROLE}"
        )
        if not isinstance(role, dict):
            raise AdminError(0, f"realm master has no role {operator_login.ADMIN_ROLE}")
        await admin.request("POST", mappings, [{"id": role.get("id"), "name": role.get("name")}])
    # Enabled last: until here a crash leaves a client that cannot log in, so the next round repairs it.
    enabled = operator_login.representation(client_id, secret)
    await admin.request("PUT", f"{_CLIENTS}/{admin.segment(uuid)}", enabled)
    return done


async def set_secret(admin: AdminConnection, client_id: str, secret: str) -> None:
    """A rotation's TELL (or RETELL): Keycloak's client secret becomes `secret` (the Secret already holds
    it)."""
    client = await _find(admin, client_id)
    if client is None:
        raise AdminError(0, f"client {client_id} in realm master is gone")
    uuid = str(client["id"])
    await admin.request(
        "PUT", f"{_CLIENTS}/{admin.segment(uuid)}", operator_login.representation(client_id, secret)
    )
