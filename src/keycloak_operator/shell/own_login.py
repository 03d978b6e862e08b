"""The operator's own login to a Keycloak it runs (ADR 0023): its client in `master` by client credentials,
with each secret the Keycloak's `<name>-operator-login` Secret holds; failing that as a client error, the
bootstrap admin makes or repairs the client, and the client logs in. A rotation asked on the Secret runs
here, each step stored in Kubernetes before Keycloak is told (core/operator_login.py decides the steps).

No secret is ever logged or put in an event: messages name the Secret and the client, never a value.
"""

from __future__ import annotations

import logging
import secrets as pysecrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from keycloak_operator.core import operator_login
from keycloak_operator.core.operator_login import LoginSecret, Step
from keycloak_operator.core.replication.resources import Credentials
from keycloak_operator.kernel import names
from keycloak_operator.kernel.events import Event
from keycloak_operator.shell import events
from keycloak_operator.shell.admin import operator_login as operator_login_admin
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.kube import SECRETS, ApiError

if TYPE_CHECKING:
    from keycloak_operator.shell.admin_logins import Logins

log = logging.getLogger(__name__)

READY = "OperatorLoginReady"
ROTATED = "OperatorLoginRotated"
FAILED = "OperatorLoginFailed"


@dataclass(frozen=True)
class _Attempt:
    """One login to one Keycloak as its own client: where to, and with which Secret's contents."""

    logins: Logins
    cred: Credentials
    url: str
    endpoint: str
    ca_pem: str | None
    login: LoginSecret  # as read when the attempt began; a rotation goes on from what it stores

    async def client_admin(self, client_id: str, secret: str) -> KeycloakAdmin | AdminError:
        return await self.logins.client_admin(
            self.cred, self.url, self.endpoint, self.ca_pem, client_id, secret
        )


def _keycloak(cred: Credentials) -> dict[str, Any]:
    """The Keycloak the events are about."""
    meta = {"name": cred.keycloak, "namespace": cred.namespace, "uid": cred.keycloak_uid}
    return {"apiVersion": names.API_VERSION, "kind": names.KEYCLOAK_KIND, "metadata": meta}


async def admin(
    logins: Logins, url: str, cred: Credentials, only_deletes: bool
) -> KeycloakAdmin | AdminError:
    endpoint = cred.endpoint or url
    name = names.operator_login_secret(cred.keycloak)
    try:
        stored = await logins.kube.get(SECRETS, cred.namespace, name)
    except ApiError as e:
        return AdminError(e.status, f"Secret {cred.namespace}/{name}: {e.status}")
    login = operator_login.parse(stored, cred.keycloak_uid) if stored is not None else None
    if not isinstance(login, LoginSecret):
        if login is not None:
            log.warning("Secret %s/%s is not used: %s", cred.namespace, name, login)
        # Not made yet (the Keycloak controller makes it), or not usable: the bootstrap admin, as before.
        return await logins.password_admin(url, cred, only_deletes)
    ca_pem = await logins.ca_of(cred)
    if isinstance(ca_pem, AdminError):
        return ca_pem
    attempt = _Attempt(logins, cred, url, endpoint, ca_pem, login)
    refused: AdminError | None = None
    for candidate in login.candidates():
        found = await attempt.client_admin(login.client_id, candidate)
        if not isinstance(found, AdminError):
            return await _rotate(attempt, candidate, found)
        if not operator_login.repairable(found.status):
            return found  # the server's failure, not the client's: the bootstrap admin would fare no better
        refused = refused or found
    return await _mend(attempt, only_deletes, refused)


async def _mend(
    attempt: _Attempt, only_deletes: bool, refused: AdminError | None
) -> KeycloakAdmin | AdminError:
    """No secret the Secret holds is Keycloak's: the bootstrap admin makes or repairs the client."""
    logins, cred, login = attempt.logins, attempt.cred, attempt.login
    boot = await logins.password_admin(attempt.url, cred, only_deletes)
    if isinstance(boot, AdminError):
        return AdminError(
            boot.status,
            f"neither the operator's client {login.client_id} in master ({refused}) nor the bootstrap admin "
            f"could log in: {boot}",
        )
    try:
        done = await operator_login_admin.ensure_client(boot, login.client_id, login.secret)
    except AdminError as e:
        # Replication goes on with the bootstrap admin; the Keycloak says why its own login is not in place.
        message = f"the operator's client {login.client_id} in master could not be made: {e}"
        if (cred, message) not in logins.reported:  # once per operator process, not once per round
            logins.reported.add((cred, message))
            await events.post(logins.kube, _keycloak(cred), Event("Warning", FAILED, message))
        return boot
    await boot.close()
    own = await attempt.client_admin(login.client_id, login.secret)
    if isinstance(own, AdminError):
        return AdminError(own.status, f"the operator's client {login.client_id}, just {done}: {own}")
    secret_name = names.operator_login_secret(cred.keycloak)
    message = (
        f"the operator signs in to master as its own client {login.client_id} ({done}; its secret is in "
        f"Secret {secret_name}): the bootstrap admin is no longer needed and may be deleted"
    )
    await events.post(logins.kube, _keycloak(cred), Event("Normal", READY, message))
    log.info("Keycloak %s/%s: operator client %s %s", cred.namespace, cred.keycloak, login.client_id, done)
    return await _rotate(attempt, login.secret, own)


async def _rotate(attempt: _Attempt, used: str, admin: KeycloakAdmin) -> KeycloakAdmin | AdminError:
    """A rotation's remaining steps, each stored before the next; `admin` logged in with `used`. A step that
    fails leaves the rotation where it is (the next round goes on from there) and `admin` in use."""
    logins, cred, login = attempt.logins, attempt.cred, attempt.login
    step = operator_login.next_step(login, used)
    if step is Step.NONE:
        return admin
    name = names.operator_login_secret(cred.keycloak)
    if step is Step.RETELL:
        # The server is back on a database from before the last rotation (a copy, a rollback, a restore):
        # it is told the current secret again, which the Secret has held since that rotation.
        try:
            await operator_login_admin.set_secret(admin, login.client_id, login.secret)
        except AdminError as e:
            log.warning("Keycloak %s/%s: the operator's client secret could not be set again: %s",
                        cred.namespace, cred.keycloak, e)  # fmt: skip
            return admin
        message = (
            f"the operator's client {login.client_id} in master held the secret from before the last "
            "rotation (its database is older than that rotation); it holds the current one again "
            f"(Secret {name})"
        )
        await events.post(logins.kube, _keycloak(cred), Event("Normal", ROTATED, message))
        return admin
    try:
        if step is Step.BEGIN:
            patch = operator_login.begin_patch(login, pysecrets.token_urlsafe(32))
            begun = operator_login.parse(
                await logins.kube.merge_patch(SECRETS, cred.namespace, name, patch), cred.keycloak_uid
            )
            if not isinstance(begun, LoginSecret) or begun.pending is None:
                return admin
            login, step = begun, Step.TELL
        if step is Step.TELL and login.pending is not None:
            await operator_login_admin.set_secret(admin, login.client_id, login.pending)
        promoted = operator_login.promote_patch(login)
        await logins.kube.merge_patch(SECRETS, cred.namespace, name, promoted)
    except (ApiError, AdminError) as e:
        log.warning("Keycloak %s/%s: rotation of the operator's client secret paused: %s",
                    cred.namespace, cred.keycloak, e)  # fmt: skip
        return admin
    await admin.close()
    assert login.pending is not None  # promote_patch refused otherwise
    rotated = await attempt.client_admin(login.client_id, login.pending)
    message = f"the operator's client {login.client_id} in master has a new secret (Secret {name})"
    await events.post(logins.kube, _keycloak(cred), Event("Normal", ROTATED, message))
    return rotated
