"""The floor: a plain async client that does, for N Keycloaks and with the operator's concurrency, exactly
the API work of the operator's first pass (the children the pure core decides, the admin Secret, the
ControllerRevision, the status), then the one status write each Keycloak needs once its Deployment is Ready.
No operator can converge faster on this API server; the operator's times are reported as a ratio to it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.scale.api import Api, Obj
from keycloak_operator.core import children, reconcile, versions
from keycloak_operator.core.common import merge_patch
from keycloak_operator.core.decide_inputs import Observed
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.shell.kube import resource_of

KC_PATH = f"/apis/{names.API_VERSION}/namespaces/{{ns}}/{names.KEYCLOAK_PLURAL}"


def path_of(obj: Obj) -> str:
    res = resource_of(obj)
    return res.path(obj["metadata"]["namespace"], obj["metadata"]["name"])


async def first_pass(api: Api, keycloak: Obj, db_secret: str) -> None:
    spec = KeycloakSpec.model_validate(keycloak["spec"])
    observed = Observed(
        keycloak=keycloak,
        deployment=None,
        public_service=None,
        existing_secrets=frozenset({db_secret}),
        version=versions.version_of(spec).format(),
    )
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    decision = reconcile.decide(spec, observed, now=now, blue_green=None)
    ns, name = keycloak["metadata"]["namespace"], keycloak["metadata"]["name"]
    status_path = f"{KC_PATH.format(ns=ns)}/{name}/status"
    if decision.status is not None:
        patch = merge_patch.merge_patch({}, decision.status)
        await api.request(
            "PATCH", status_path, {"status": patch}, content_type="application/merge-patch+json"
        )
    if decision.create_admin_secret:
        secret = children.admin_secret(reconcile.owner_of(keycloak), "floor-password")
        await api.request("POST", f"/api/v1/namespaces/{ns}/secrets", secret)
    for obj in decision.apply:
        await api.apply(path_of(obj), obj)
    if decision.revision is not None:
        await api.request("POST", f"/apis/apps/v1/namespaces/{ns}/controllerrevisions", decision.revision)


async def run(api: Api, keycloaks: list[Obj], db_secret: str, workers: int) -> float:
    """Seconds from the first create until every Keycloak's Deployment is Ready and its status says so."""
    ns = keycloaks[0]["metadata"]["namespace"]
    deployments_path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    _, rv = await api.items(deployments_path)
    replicas = {names.deployment(k["metadata"]["name"]): int(k["spec"]["replicas"]) for k in keycloaks}
    pending = set(replicas)
    done = asyncio.Event()

    async def mark_running(deployment: str) -> None:
        name = deployment.removesuffix("-keycloak")
        body: dict[str, Any] = {"status": {"phase": "Running", "readyReplicas": replicas[deployment]}}
        await api.request(
            "PATCH",
            f"{KC_PATH.format(ns=ns)}/{name}/status",
            body,
            content_type="application/merge-patch+json",
        )
        pending.discard(deployment)
        if not pending:
            done.set()

    marking: set[asyncio.Task[None]] = set()

    async def watch() -> None:
        async for _, _, obj in api.watch(deployments_path, rv):
            dep = obj["metadata"]["name"]
            ready = int((obj.get("status") or {}).get("readyReplicas") or 0)
            if dep in pending and ready >= replicas[dep]:
                task = asyncio.create_task(mark_running(dep))
                marking.add(task)
                task.add_done_callback(marking.discard)

    watcher = asyncio.create_task(watch())
    started = time.monotonic()
    queue: asyncio.Queue[Obj] = asyncio.Queue()
    for k in keycloaks:
        queue.put_nowait(k)

    async def worker() -> None:
        while not queue.empty():
            k = queue.get_nowait()
            created = await api.request("POST", KC_PATH.format(ns=ns), k)
            await first_pass(api, created, db_secret)

    await asyncio.gather(*(worker() for _ in range(workers)))
    await done.wait()
    elapsed = time.monotonic() - started
    watcher.cancel()
    return elapsed
