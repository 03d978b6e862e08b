"""The operator's own login to a Keycloak it runs: a confidential client in `master` with a service account
holding the realm's `admin` role, whose secret lives in the Keycloak's `<name>-operator-login` Secret
(ADR 0023). Keycloak 26 calls the bootstrap admin temporary; once this client works the bootstrap admin may
be deleted, and everything keeps working.

Pure: which secrets to try, what the client must look like, and the next step of a rotation. The order of
every step keeps one rule: a secret is stored in Kubernetes before Keycloak is told it, so whatever step a
crash interrupts, one of the secrets the Secret holds is the one Keycloak knows.
"""

from __future__ import annotations

import base64
import binascii
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from keycloak_operator.kernel import names

CLIENT_ID = "kcop-operator"
REALM = "master"
ADMIN_ROLE = "admin"  # master's role that holds every realm's administration (a service account may hold it)
# On the client: made by the operator as its own login. A client of that id without it is someone else's and
# is never taken over (it would be given the admin role).
MARKER_ATTRIBUTE = f"{names.GROUP}.operator-login"
KEY_CLIENT_ID = "clientId"
KEY_SECRET = "clientSecret"
KEY_PENDING = "pendingClientSecret"  # a rotation's new secret, until Keycloak has it and it is promoted
# The secret a promotion replaced, kept until the next one: a database Keycloak may come back to (a blue-green
# copy made before the rotation, a rollback, a restore) still holds it, and without it and the bootstrap
# admin nobody could administer master.
KEY_PREVIOUS = "previousClientSecret"
MAX_SECRET_CHARS = 512
# A token endpoint answers a client it does not know, a wrong secret and a disabled client with 401
# (`invalid_client`), and a client without service accounts with 400 (`unauthorized_client`): all mean the
# client must be made or repaired. Anything else (unreachable, 5xx) is the server's problem, not the client's.
REPAIRABLE_STATUSES = frozenset({400, 401})

# What the client must be; anything else of it is left as it is.
_REQUIRED: dict[str, Any] = {
    "protocol": "openid-connect",
    "enabled": True,
    "publicClient": False,
    "bearerOnly": False,
    "clientAuthenticatorType": "client-secret",
    "serviceAccountsEnabled": True,
    "standardFlowEnabled": False,
    "implicitFlowEnabled": False,
    "directAccessGrantsEnabled": False,
}


@dataclass(frozen=True)
class LoginSecret:
    """What the operator-login Secret holds."""

    client_id: str
    secret: str
    pending: str | None  # a rotation under way: stored here before Keycloak is told it
    rotate: bool  # a rotation asked (names.ANNOTATION_ROTATE_LOGIN), not yet begun
    resource_version: str
    previous: str | None = None  # the secret the last promotion replaced (KEY_PREVIOUS)

    def candidates(self) -> tuple[str, ...]:
        """The secrets Keycloak may know, in the order to try them: the current one, then a rotation's new
        one (Keycloak was told it, the Secret not yet promoted it, when a crash came between), then the one
        the last rotation replaced (Keycloak came back to a database from before it)."""
        found = [self.secret, self.pending, self.previous]
        return tuple(dict.fromkeys(s for s in found if s is not None))


def _decoded(data: Mapping[str, Any], key: str) -> str | None:
    raw = data.get(key)
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise ValueError(key)
    try:
        value = base64.b64decode(raw, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError(key) from None
    if not value or len(value) > MAX_SECRET_CHARS or not value.isprintable() or value != value.strip():
        raise ValueError(key)
    return value


def parse(secret: Mapping[str, Any], owner_uid: str) -> LoginSecret | str:
    """The Secret's login, or why it cannot be used (never quoting a value). Only a Secret the Keycloak owns
    is used: one someone else put under the name could name a secret its author knows."""
    meta = secret.get("metadata") or {}
    refs = meta.get("ownerReferences") or []
    owned = any(isinstance(r, dict) and r.get("uid") == owner_uid and r.get("controller") for r in refs)
    if not owner_uid or not owned:
        return "it is not this Keycloak's (no controller reference to it)"
    data = secret.get("data") or {}
    if not isinstance(data, Mapping):
        return "it has no data"
    try:
        client_id, value, pending, previous = (
            _decoded(data, k) for k in (KEY_CLIENT_ID, KEY_SECRET, KEY_PENDING, KEY_PREVIOUS)
        )
    except ValueError as e:
        return f"`{e}` is not a printable value of at most {MAX_SECRET_CHARS} characters"
    if client_id is None or value is None:
        return f"it needs `{KEY_CLIENT_ID}` and `{KEY_SECRET}`"
    annotations = meta.get("annotations") or {}
    return LoginSecret(
        client_id=client_id,
        secret=value,
        pending=pending if pending != value else None,
        rotate=isinstance(annotations, Mapping) and names.ANNOTATION_ROTATE_LOGIN in annotations,
        resource_version=str(meta.get("resourceVersion") or ""),
        previous=previous if previous != value else None,
    )


def repairable(status: int) -> bool:
    """A failed client-credentials login the bootstrap admin can mend (the client missing or wrong)."""
    return status in REPAIRABLE_STATUSES


def representation(client_id: str, secret: str, *, enabled: bool = True) -> dict[str, Any]:
    """The client as the operator makes it (or repairs it): confidential, service account only. Made or
    repaired disabled, and enabled once its service account holds `admin`: a crash between would otherwise
    leave a client that logs in (Keycloak gives a token whatever it holds) and may do nothing, which no
    failed login would ever send to repair."""
    return {
        "clientId": client_id,
        "name": "keycloak-operator",
        "description": "The Keycloak operator's own login (service account with master's admin role)",
        **_REQUIRED,
        "enabled": enabled,
        "secret": secret,
        "attributes": {MARKER_ATTRIBUTE: "true"},
    }


def is_ours(found: Mapping[str, Any]) -> bool:
    attributes = found.get("attributes") or {}
    return isinstance(attributes, Mapping) and attributes.get(MARKER_ATTRIBUTE) == "true"


def drift(found: Mapping[str, Any]) -> list[str]:
    """The required fields the found client does not have (its secret is never read back)."""
    wrong = [k for k, v in _REQUIRED.items() if found.get(k) != v]
    return wrong + ([] if is_ours(found) else [f"attributes.{MARKER_ATTRIBUTE}"])


def holds_admin(realm_roles: list[Any]) -> bool:
    """The service account's realm role mappings include master's `admin`."""
    return any(isinstance(r, Mapping) and r.get("name") == ADMIN_ROLE for r in realm_roles)


class Step(enum.Enum):
    NONE = "none"
    BEGIN = "begin"  # store a new secret as pending in the Secret
    TELL = "tell"  # set Keycloak's client secret to the pending one
    PROMOTE = "promote"  # the pending secret becomes the Secret's current one
    RETELL = "retell"  # Keycloak came back to the previous secret: set it to the current one again


def next_step(login: LoginSecret, used: str) -> Step:
    """The next rotation step, given the secret that just logged in."""
    if used != login.secret and used == login.previous and used != login.pending:
        return Step.RETELL
    if login.pending is not None and used == login.pending:
        return Step.PROMOTE
    if login.pending is not None:
        return Step.TELL
    return Step.BEGIN if login.rotate else Step.NONE


def _b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def begin_patch(login: LoginSecret, new_secret: str) -> dict[str, Any]:
    """Stores the new secret and takes the request away in one conditional write (409 if the Secret moved)."""
    return {
        "metadata": {
            "resourceVersion": login.resource_version,
            "annotations": {names.ANNOTATION_ROTATE_LOGIN: None},
        },
        "data": {KEY_PENDING: _b64(new_secret)},
    }


def promote_patch(login: LoginSecret) -> dict[str, Any]:
    """Keycloak knows the pending secret: it becomes the current one, in one conditional write."""
    if login.pending is None:
        raise ValueError("no rotation under way")
    return {
        "metadata": {"resourceVersion": login.resource_version},
        "data": {KEY_SECRET: _b64(login.pending), KEY_PENDING: None, KEY_PREVIOUS: _b64(login.secret)},
    }
