"""The measured phases. Each creates its own namespace and its own operator process (watching only that
namespace), so phases never see each other's objects; each returns plain numbers for the report."""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import localcluster
from bench.scale import floor
from bench.scale.api import Api, Obj, delta
from bench.scale.usage import Usage, cpu_seconds
from keycloak_operator.kernel import names
from localcluster import manifests, stages
from localcluster.operator_process import OperatorProcess

IMAGE = "quay.io/keycloak/keycloak"
KC_PATH = f"/apis/{names.API_VERSION}/namespaces/{{ns}}/{names.KEYCLOAK_PLURAL}"
OPERATOR_WORKERS = 8  # the operator's default KCOP_WORKERS; the floor uses the same concurrency
OPERATOR_RESOURCES = {"keycloaks", "deployments", "services", "secrets", "events", "controllerrevisions"}


def keycloak(ns: str, i: int, image: str = f"{IMAGE}:26.0.0", **spec: Any) -> Obj:
    return manifests.keycloak(
        f"kc{i:04d}", ns, image=image, replicas=1, cacheIsolation={"autoRevision": True}, **spec
    )


class Phase:
    """A namespace with the database Secret, and an operator process on it with its usage sampled."""

    def __init__(
        self, cluster: localcluster.Cluster, api: Api, prefix: str, resync_seconds: float = 60
    ) -> None:
        self.cluster, self.api = cluster, api
        self.ns = f"{prefix}-{uuid.uuid4().hex[:5]}"
        self.resync_seconds = resync_seconds
        self.operator: OperatorProcess | None = None
        self.usage: Usage | None = None
        self._sampler: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Phase:
        await self.api.request("POST", "/api/v1/namespaces", {"metadata": {"name": self.ns}})
        await self.api.request("POST", f"/api/v1/namespaces/{self.ns}/secrets", manifests.db_secret(self.ns))
        return self

    def start_operator(self) -> None:
        log_dir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
        self.operator = OperatorProcess(self.cluster.kubeconfig, log_dir, resync_seconds=self.resync_seconds)
        self.operator.start("--namespace", self.ns)
        assert self.operator.proc is not None
        self.usage = Usage(self.operator.proc.pid)
        self._sampler = asyncio.create_task(self.usage.run())

    def cpu(self) -> float:
        assert self.operator is not None and self.operator.proc is not None
        return cpu_seconds(self.operator.proc.pid)

    def errors(self) -> list[str]:
        assert self.operator is not None
        return [
            line for line in self.operator.log_text().splitlines() if "ERROR" in line or "Traceback" in line
        ]

    async def __aexit__(self, *_: object) -> None:
        if self._sampler is not None:
            self._sampler.cancel()
        if self.operator is not None:
            self.operator.stop()
        await self.api.request("DELETE", f"/api/v1/namespaces/{self.ns}")
        # Wait for it to go: garbage-collecting hundreds of Deployments and pods would load the API server
        # and the controllers while the next phase is being measured.
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            r = await self.api.http.get(f"/api/v1/namespaces/{self.ns}")
            if r.status_code == 404:
                return
            await asyncio.sleep(2)


async def create_all(api: Api, objs: list[Obj]) -> None:
    await asyncio.gather(
        *(api.request("POST", KC_PATH.format(ns=o["metadata"]["namespace"]), o) for o in objs)
    )


async def until_all_running(api: Api, ns: str, want: dict[str, str], limit_s: float) -> None:
    """Until every named Keycloak is Running with the given image (watched, not polled)."""
    items, rv = await api.items(KC_PATH.format(ns=ns))
    pending = dict(want)

    def check(obj: Obj) -> None:
        status = obj.get("status") or {}
        name = obj["metadata"]["name"]
        if name in pending and status.get("phase") == "Running" and status.get("image") == pending[name]:
            del pending[name]

    for obj in items:
        check(obj)

    async def follow() -> None:
        async for _, _, obj in api.watch(KC_PATH.format(ns=ns), rv):
            check(obj)
            if not pending:
                return

    if pending:
        await asyncio.wait_for(follow(), limit_s)


async def convergence(cluster: localcluster.Cluster, api: Api, n: int) -> dict[str, Any]:
    async with Phase(cluster, api, f"floor{n}") as fl:
        floor_s = await floor.run(
            api, [keycloak(fl.ns, i) for i in range(n)], manifests.DB_SECRET, OPERATOR_WORKERS
        )
    async with Phase(cluster, api, f"conv{n}") as ph:
        ph.start_operator()
        await asyncio.sleep(3)  # the operator's startup is not convergence
        before, cpu0 = await api.request_counts(), ph.cpu()
        started = time.monotonic()
        objs = [keycloak(ph.ns, i) for i in range(n)]
        await create_all(api, objs)
        await until_all_running(api, ph.ns, {o["metadata"]["name"]: o["spec"]["image"] for o in objs}, 1800)
        operator_s = time.monotonic() - started
        await asyncio.sleep(2)
        requests = delta(before, await api.request_counts())
        assert ph.usage is not None
        return {
            "n": n,
            "floor_s": round(floor_s, 2),
            "operator_s": round(operator_s, 2),
            "ratio": round(operator_s / floor_s, 2),
            "requests_per_keycloak": {
                k: round(v / n, 2)
                for k, v in sorted(requests.items())
                if k.split()[1].split("/")[0] in OPERATOR_RESOURCES
            },
            "peak_rss_mb": round(ph.usage.peak_mb, 1),
            "cpu_s": round(ph.cpu() - cpu0, 2),
            "errors": len(ph.errors()),
            "namespace": ph.ns,
        }


WRITE_VERBS = {"POST", "PUT", "PATCH", "DELETE", "APPLY"}


async def no_namespace_terminating(api: Api, seconds: float) -> None:
    """Returns once no namespace is being deleted; after `seconds`, fails naming those still going (one whose
    objects wait for an operator that is gone never ends)."""
    deadline = time.monotonic() + seconds
    while True:
        namespaces, _ = await api.items("/api/v1/namespaces")
        going = [
            n["metadata"]["name"] for n in namespaces if n.get("status", {}).get("phase") == "Terminating"
        ]
        if not going:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"namespaces still terminating after {seconds:.0f} s: {', '.join(sorted(going))}"
            )
        await asyncio.sleep(1)


async def idle(
    cluster: localcluster.Cluster, api: Api, n: int, seconds: float, resync: float
) -> dict[str, Any]:
    async with Phase(cluster, api, f"idle{n}", resync_seconds=resync) as ph:
        ph.start_operator()
        objs = [keycloak(ph.ns, i) for i in range(n)]
        await create_all(api, objs)
        await until_all_running(api, ph.ns, {o["metadata"]["name"]: o["spec"]["image"] for o in objs}, 1800)
        await asyncio.sleep(resync + 5)  # the passes the last status writes triggered
        # The counts are the API server's, for everyone: the namespace controller emptying a namespace an
        # earlier phase (or run) deleted would count its DELETEs as writes on the operator's resources.
        await no_namespace_terminating(api, 300)
        before = await api.request_counts()
        await asyncio.sleep(seconds)
        requests = delta(before, await api.request_counts())
        writes = {
            k: v
            for k, v in requests.items()
            if k.split()[0] in WRITE_VERBS and k.split()[1] in OPERATOR_RESOURCES | {"keycloaks/status"}
        }
        assert ph.usage is not None
        return {
            "n": n,
            "seconds": seconds,
            "resyncs": int(seconds // resync),
            "writes": writes,
            "write_total": sum(writes.values()),
            "rss_mb": round(ph.usage.samples[-1][1], 1) if ph.usage.samples else 0.0,
        }


async def soak(
    cluster: localcluster.Cluster, api: Api, base: int, seconds: float, rate: float
) -> dict[str, Any]:
    """Steady churn at `rate` actions per second: scale, image bump (same major), create, delete."""
    rng = random.Random(7)
    async with Phase(cluster, api, "soak", resync_seconds=30) as ph:
        ph.start_operator()
        want: dict[str, tuple[str, int]] = {}
        objs = [keycloak(ph.ns, i) for i in range(base)]
        await create_all(api, objs)
        want.update({o["metadata"]["name"]: (o["spec"]["image"], 1) for o in objs})
        next_id, actions, started = base, 0, time.monotonic()
        while time.monotonic() - started < seconds:
            action = rng.choice(["scale", "image", "create", "delete"])
            name = rng.choice(sorted(want))
            path = f"{KC_PATH.format(ns=ph.ns)}/{name}"
            image, replicas = want[name]
            if action == "scale":
                replicas = rng.randint(1, 3)
                await api.request(
                    "PATCH",
                    path,
                    {"spec": {"replicas": replicas}},
                    content_type="application/merge-patch+json",
                )
                want[name] = (image, replicas)
            elif action == "image":
                image = f"{IMAGE}:26.0.{rng.randint(1, 9)}"
                await api.request(
                    "PATCH", path, {"spec": {"image": image}}, content_type="application/merge-patch+json"
                )
                want[name] = (image, replicas)
            elif action == "create":
                obj = keycloak(ph.ns, next_id)
                next_id += 1
                await create_all(api, [obj])
                want[obj["metadata"]["name"]] = (obj["spec"]["image"], 1)
            elif len(want) > base // 2:
                await api.request("DELETE", path)
                del want[name]
            actions += 1
            await asyncio.sleep(1 / rate)
        await until_all_running(api, ph.ns, {k: v[0] for k, v in want.items()}, 600)
        converged, deadline = 0, time.monotonic() + 300
        while converged < len(want) and time.monotonic() < deadline:
            items, _ = await api.items(KC_PATH.format(ns=ph.ns))
            converged = sum(
                1
                for k in items
                if k["metadata"]["name"] in want
                and (k.get("status") or {}).get("readyReplicas") == want[k["metadata"]["name"]][1]
                and (k.get("status") or {}).get("image") == want[k["metadata"]["name"]][0]
            )
            if converged < len(want):
                await asyncio.sleep(2)
        assert ph.usage is not None
        samples = ph.usage.samples
        half = [s for s in samples if s[0] >= samples[-1][0] / 2] if samples else []
        slope = _slope(half) * 3600 if len(half) > 2 else 0.0
        return {
            "seconds": seconds,
            "actions": actions,
            "keycloaks_at_end": len(want),
            "converged": converged,
            "errors": len(ph.errors()),
            "rss_start_mb": round(_after_warm_up(samples, seconds), 1),
            "rss_end_mb": round(samples[-1][1], 1) if samples else 0.0,
            "rss_peak_mb": round(ph.usage.peak_mb, 1),
            "rss_slope_second_half_mb_per_h": round(slope, 1),
            "rss_samples": [(round(t, 1), round(mb, 1)) for t, mb in samples[:: max(1, len(samples) // 400)]],
        }


def _after_warm_up(samples: list[tuple[float, float]], seconds: float) -> float:
    """RSS once the first tenth of the churn (at most two minutes) is over: caches and pools are filled."""
    warm = min(120.0, seconds / 10)
    return next((mb for t, mb in samples if t >= warm), samples[-1][1] if samples else 0.0)


def _slope(points: list[tuple[float, float]]) -> float:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


async def upgrades(cluster: localcluster.Cluster, api: Api, count: int, boot: float) -> dict[str, Any]:
    """`count` blue-green upgrades at once; per Keycloak, from watch events: cutover latency (green fully
    Ready -> public selector on green) and overhead (Completed - spec changed - boot)."""
    # Patch releases on a line Keycloak rolls: the planner lets them share the database under blue-green.
    old, new = f"{IMAGE}:26.7.0", f"{IMAGE}:26.7.3"
    stages.apply_ready_delay(cluster.kubeconfig, new, boot)
    policy = {"strategy": "BlueGreen", "drainDelay": "0s"}
    try:
        async with Phase(cluster, api, "upgrades") as ph:
            ph.start_operator()
            objs = [keycloak(ph.ns, i, image=old, upgradePolicy=policy) for i in range(count)]
            await create_all(api, objs)
            await until_all_running(api, ph.ns, {o["metadata"]["name"]: old for o in objs}, 900)
            ns = ph.ns
            green_ready: dict[str, float] = {}
            switched: dict[str, float] = {}
            completed: dict[str, float] = {}
            green_tracks: dict[str, str] = {}
            _, dep_rv = await api.items(f"/apis/apps/v1/namespaces/{ns}/deployments")
            _, svc_rv = await api.items(f"/api/v1/namespaces/{ns}/services")
            _, kc_rv = await api.items(KC_PATH.format(ns=ns))

            async def deployments() -> None:
                async for at, _, d in api.watch(f"/apis/apps/v1/namespaces/{ns}/deployments", dep_rv):
                    name = d["metadata"]["name"]
                    if name.endswith("-green-keycloak"):
                        kc = name.removesuffix("-green-keycloak")
                        green_tracks[kc] = d["metadata"]["labels"].get(names.LABEL_TRACK, "")
                        if (d.get("status") or {}).get("readyReplicas") == 1 and kc not in green_ready:
                            green_ready[kc] = at

            async def services() -> None:
                async for at, _, s in api.watch(f"/api/v1/namespaces/{ns}/services", svc_rv):
                    name = s["metadata"]["name"]
                    kc = name.removesuffix("-service")
                    track = (s.get("spec") or {}).get("selector", {}).get(names.LABEL_TRACK)
                    if name.endswith("-service") and kc in green_tracks and track == green_tracks[kc]:
                        switched.setdefault(kc, at)

            async def keycloaks() -> None:
                async for at, _, k in api.watch(KC_PATH.format(ns=ns), kc_rv):
                    bg = (k.get("status") or {}).get("blueGreen") or {}
                    if bg.get("state") == "Completed" and bg.get("greenImage") == new:
                        completed.setdefault(k["metadata"]["name"], at)

            watchers = [asyncio.create_task(w()) for w in (deployments, services, keycloaks)]
            await asyncio.sleep(1)
            changed = time.monotonic()
            await asyncio.gather(
                *(
                    api.request(
                        "PATCH",
                        f"{KC_PATH.format(ns=ns)}/{o['metadata']['name']}",
                        {"spec": {"image": new}},
                        content_type="application/merge-patch+json",
                    )
                    for o in objs
                )
            )
            deadline = time.monotonic() + 900
            while len(completed) < count and time.monotonic() < deadline:  # noqa: ASYNC110  (watchers fill it)
                await asyncio.sleep(0.5)
            for w in watchers:
                w.cancel()
            names_ = [o["metadata"]["name"] for o in objs]
            latencies = [switched[k] - green_ready[k] for k in names_ if k in switched and k in green_ready]
            overheads = [completed[k] - changed - boot for k in names_ if k in completed]
            return {
                "count": count,
                "boot_s": boot,
                "completed": len(completed),
                "cutover_ms_median": round(statistics.median(latencies) * 1000) if latencies else None,
                "cutover_ms_worst": round(max(latencies) * 1000) if latencies else None,
                "overhead_s_median": round(statistics.median(overheads), 2) if overheads else None,
                "overhead_s_worst": round(max(overheads), 2) if overheads else None,
                "cutover_ms": [round(x * 1000) for x in latencies],
                "errors": len(ph.errors()),
            }
    finally:
        stages.remove(cluster.kubeconfig, new)
