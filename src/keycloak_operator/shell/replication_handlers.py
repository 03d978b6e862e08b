"""kopf wiring for the replicated kinds (models/kinds.py): events become server URLs in a work queue of
their own.

A round always covers one whole server (core/replication/sync.py says why), so any change to a resource of
a replicated kind, or to a Keycloak that realms target, queues that server's URL; the queue
runs one round per URL at a time and folds events that arrive meanwhile into one more round. The resync tick
re-queues every server seen, which is what repairs hand edits made inside Keycloak.

Two lanes, each its own queue and workers: the Keycloaks this operator runs, and external servers. A URL's
lane follows from the URL alone, so one server is never in two queues at once. Either lane may hold a
tenant's server (any namespace can create a `Keycloak`, and its image answers as it likes), so every round
is bounded the same way whatever its lane: a deadline per request and a size and shape cap per answer
(shell/admin/keycloak.py), a time budget per round (shell/replication/round.py), a growing delay while
a server stays unusable (core/replication/retry.py), and at most half a lane's workers for the servers of
one namespace (core/replication/fairness.py). ADR 0012.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import kopf

from keycloak_operator.core.replication.fairness import round_group
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.resources import server_url
from keycloak_operator.kernel import names
from keycloak_operator.kernel.names import HTTP_PORT
from keycloak_operator.models.kinds import REPLICATED
from keycloak_operator.models.replicated import ReplicatedKind
from keycloak_operator.shell import metrics
from keycloak_operator.shell.kube import Kube
from keycloak_operator.shell.leadership import STANDBY_RECHECK_SECONDS, leadership
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication import Replicator
from keycloak_operator.shell.runtime import NO_SERVER, runtime
from keycloak_operator.shell.settings import Settings
from keycloak_operator.shell.workqueue import WorkQueue

log = logging.getLogger(__name__)

WORKERS_PER_LANE = 4
# One namespace's servers (its Keycloaks, the external servers only its realms name), or one shared external
# host, take at most half a lane's workers at once (core/replication/fairness.py round_group): a tenant's slow
# servers leave the rest of the lane to others.
WORKERS_PER_GROUP = WORKERS_PER_LANE // 2


async def _process(url: str) -> float | None:
    assert runtime.replication.replicator is not None
    if not leadership.all_active():
        return STANDBY_RECHECK_SECONDS  # another replica leads; kopf is paused too
    started = time.monotonic()
    try:
        return await runtime.replication.replicator.sync(url)
    finally:
        metrics.replication_round(time.monotonic() - started)


def resync() -> None:
    """The resync tick (shell/lifecycle.py): every server seen gets a round; it repairs hand edits made
    inside Keycloak."""
    for url in {*runtime.replication.servers.values(), NO_SERVER}:
        runtime.replication.queue(url)


def _group(url: str) -> str:
    """The round's group (fairness.round_group), from the namespaces whose realms name the server."""
    return round_group(
        url, {key.namespace for key, named in runtime.replication.servers.items() if named == url}
    )


def _lane() -> WorkQueue[str]:
    return WorkQueue(_process, workers=WORKERS_PER_LANE, group=_group, per_group=WORKERS_PER_GROUP)


def start(kube: Kube, settings: Settings) -> None:
    """Called once at startup (shell/lifecycle.py), with the client and settings both controllers share:
    the namespaces the operator watches (None: all; a round never touches markers of others), where admin
    logins may go, the write limits and the revocation grace."""
    runtime.replication.policy = settings.policy
    if runtime.replication.replicator is None:
        limiter = WriteLimiter(settings.writes_per_second, settings.namespace_writes_per_second)
        runtime.replication.replicator = Replicator(
            kube,
            settings.namespaces,
            limiter,
            policy=settings.policy,
            revocation_grace=settings.revocation_grace,
            concurrency=settings.replication_concurrency,
            format_in_effect=leadership.format_in_effect,
            round_budget=settings.round_budget,
            namespace_cap=settings.namespace_cap,
        )
    if runtime.replication.own is None or runtime.replication.external is None:
        runtime.replication.own = _lane()
        runtime.replication.external = _lane()
        runtime.replication.own.start()
        runtime.replication.external.start()


async def stop() -> None:
    """Both lanes; the shared client is closed after both controllers stopped."""
    for lane in (runtime.replication.own, runtime.replication.external):
        if lane is not None:
            await lane.stop()


def _key(kind: str, body: kopf.Body) -> ObjectKey:
    return ObjectKey(kind, str(body.metadata["namespace"]), str(body.metadata["name"]))


def _realm_event(event: kopf.RawEvent, body: kopf.Body) -> None:
    key = _key(names.REALM_KIND, body)
    before = runtime.replication.servers.get(key)
    url = server_url(dict(body), runtime.replication.policy) or NO_SERVER
    if event["type"] == "DELETED":
        runtime.replication.servers.pop(key, None)
        metrics.FLEET.replicated_gone(key.kind, key.namespace, key.name)
    else:
        runtime.replication.servers[key] = url
    for target in {url, before or url}:  # a realm moved to another server: both rounds must run
        runtime.replication.queue(target)


def _watch(kind: ReplicatedKind) -> Callable[..., Awaitable[None]]:
    """One event handler per replicated kind (models/kinds.py): a change queues the rounds it touches."""

    async def changed(event: kopf.RawEvent, body: kopf.Body, **_: Any) -> None:
        if kind.in_realm:
            _in_realm_event(kind.kind, event, body)
        else:
            _realm_event(event, body)

    kopf.on.event(names.GROUP, names.VERSION, kind.plural, id=f"{kind.plural}-event")(changed)
    return changed


ON_EVENT: Final[Mapping[str, Callable[..., Awaitable[None]]]] = {k.kind: _watch(k) for k in REPLICATED}


def _in_realm_event(kind: str, event: kopf.RawEvent, body: kopf.Body) -> None:
    """Something declared in a realm (`spec.realm`) changed: the rounds of its realm's server run, and of
    the realm it named before, if it moved."""
    key = _key(kind, body)
    realm = (body.get("spec") or {}).get("realm") or {}
    parent = ObjectKey(
        names.REALM_KIND, str(realm.get("namespace") or key.namespace), str(realm.get("name", ""))
    )
    before = runtime.replication.realms_of_client.get(key)
    if event["type"] == "DELETED":
        runtime.replication.realms_of_client.pop(key, None)
        metrics.FLEET.replicated_gone(key.kind, key.namespace, key.name)
    else:
        runtime.replication.realms_of_client[key] = parent
    for realm_key in {parent, before or parent}:
        runtime.replication.queue(runtime.replication.servers.get(realm_key, NO_SERVER))


@kopf.on.event(names.GROUP, names.VERSION, names.KEYCLOAK_PLURAL)
async def keycloak_changed(body: kopf.Body, **_: Any) -> None:
    """realmNamespaces or the admin Secret may have changed: the rounds of realms on it run again."""
    if runtime.replication.own is None:
        return
    url = names.keycloak_url(
        str(body.metadata["name"]),
        str(body.metadata["namespace"]),
        HTTP_PORT,
        runtime.replication.policy.cluster_domain,
    )
    if url in runtime.replication.servers.values():
        runtime.replication.queue(url)
