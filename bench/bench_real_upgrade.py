"""Real-pod upgrades on the real node: what sign-ins see, and how long a real Keycloak takes to be Ready.

    uv run python bench/bench_real_upgrade.py [--runs 1] [--strategies BlueGreen Recreate]
        [--no-optimized] [--no-standalone] [--out bench/results/real_upgrade.json]

Nothing else should run real pods meanwhile: on two cores, two Keycloak upgrades at once measure each
other (where the real node is shared, run it under the lock its users take: `flock LOCKFILE uv run ...`).
The operator runs as the chart's pod (its image built from this checkout), watching only this benchmark's
namespaces; the benchmark refuses to start while another operator runs. For each run of each strategy, in
a namespace of its own: PostgreSQL and a 2-replica Keycloak FROM on the real node (cache isolation by
revision), a realm and a confidential client replicated by the operator, a user made through the admin API;
then sign-ins (localcluster.signins, one after another, each traced to the pod that answered) from before
the image change to TO until 20 more after the upgrade completed, while pods and the Keycloak's status are
polled every 0.25 s. `upgradePolicy.strategy` BlueGreen makes a green Deployment and cuts over once it is
Ready; Recreate, the default, rolls a patch release pod by pod. Reported per run:

1. sign-ins attempted and failed, over the whole load and from the change to the upgrade completed;
2. time from the image change (the PATCH answered) to green serving (the first sign-in answered by a pod of
   the new image) and to the upgrade completed (currentVersion TO, no nextVersion, 2 ready replicas);
3. each new pod's Ready time (created -> Ready condition; API timestamps, so to the second) and, from its
   log, when Keycloak said it had started (and, for `start`, how long it re-augmented first);
4. the operator's overhead beyond Keycloak's start: time to green serving minus green's slowest pod Ready
   time, and first green pod Ready -> green's first sign-in.

Then, in another namespace and not through the operator, standalone 2-pod Deployments whose pods carry the
environment the operator renders for its own: the stock TO with `start` (re-augments at every start, as the
operator's pods do on a stock image) and TO as the local cluster runs it, built by `kc.sh build` with the
operator's options (hack/build-keycloak-image.sh --optimized), with `start --optimized`, which the operator
uses itself once a preflight has found the build (ADR 0026). Prints tables and writes --out (JSON). Not a
test: it asserts nothing. Everything it creates (namespaces, the Helm release) is deleted at the end; the
images stay in the node's containerd, like the tests' and the demo's.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import functools
import json
import os
import platform
import re
import secrets
import signal
import ssl
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import localcluster  # noqa: E402
from keycloak_operator.core import children  # noqa: E402
from keycloak_operator.core.deployment import render_deployment  # noqa: E402
from keycloak_operator.kernel import names  # noqa: E402
from keycloak_operator.models.keycloak import KeycloakSpec  # noqa: E402
from localcluster import app_images, helm, real_keycloak, signins  # noqa: E402
from localcluster.node_config import NODE_NAME  # noqa: E402

FROM_VERSION, TO_VERSION = "26.7.0", "26.7.3"  # one minor line: Keycloak supports rolling between them
KEYCLOAK = "sso"
REALM, CLIENT, USER, PASSWORD = "bench", "signin", "alice", "alice-password-1"
POLL_SECONDS = 0.25
UPGRADE_TIMEOUT = 900.0
SETTLE_SECONDS = 10.0  # after completion, kube-proxy has dropped the old pods by then
STOCK_REF = f"kcop.local/keycloak:{TO_VERSION}-stock"
OPTIMIZED_NOTE = "standalone Deployment, not through the operator (which starts it so after a preflight)"


# ---- pure: pods, logs and figures (tests/unit/harness/test_bench_real_upgrade.py) --------------------------


def parse_time(text: str) -> float:
    """An RFC 3339 timestamp from the API server or the kubelet (Z, nanoseconds) as epoch seconds."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class PodRecord:
    """One pod as the polls saw it; times are epoch seconds (created, started, ready from the API)."""

    name: str
    uid: str
    ip: str
    image: str
    created: float
    started: float | None  # the container's running.startedAt (the last start, if it restarted)
    ready: float | None  # the Ready condition's lastTransitionTime when first seen True
    first_seen: float
    last_seen: float
    restarts: int = 0


def observe_pod(previous: PodRecord | None, pod: dict[str, Any], now: float) -> PodRecord:
    """The record of `pod` after one more poll at `now`; a Ready time once seen is kept."""
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    ready = previous.ready if previous is not None else None
    if ready is None:
        for c in status.get("conditions") or []:
            if c.get("type") == "Ready" and c.get("status") == "True" and c.get("lastTransitionTime"):
                ready = parse_time(c["lastTransitionTime"])
    container: dict[str, Any] = next(iter(status.get("containerStatuses") or []), {})
    running = (container.get("state") or {}).get("running") or {}
    started = parse_time(running["startedAt"]) if running.get("startedAt") else None
    if started is None and previous is not None:
        started = previous.started
    return PodRecord(
        name=meta["name"],
        uid=meta["uid"],
        ip=status.get("podIP") or (previous.ip if previous else ""),
        image=(spec.get("containers") or [{}])[0].get("image", ""),
        created=parse_time(meta["creationTimestamp"]),
        started=started,
        ready=ready,
        first_seen=previous.first_seen if previous else now,
        last_seen=now,
        restarts=int(container.get("restartCount", 0)),
    )


def image_at(pods: Iterable[PodRecord], ip: str, at: float) -> str:
    """The image of the pod that had address `ip` at `at` ("" if none did): the one whose lifetime as seen
    (created to last polled) covers `at`, else the nearest (an address reused by a later pod)."""
    candidates = [p for p in pods if ip and p.ip == ip]
    if not candidates:
        return ""

    def distance(p: PodRecord) -> float:
        return 0.0 if p.created <= at <= p.last_seen else min(abs(at - p.created), abs(at - p.last_seen))

    return min(candidates, key=distance).image


def upgrade_done(status: dict[str, Any], version: str, replicas: int = 2) -> bool:
    """The upgrade to `version` completed: current, nothing next, every replica Ready."""
    versions = status.get("versions") or {}
    return (
        str(versions.get("currentVersion", "")).startswith(f"{version}#")
        and not versions.get("nextVersion")
        and status.get("readyReplicas") == replicas
    )


def status_mark(status: dict[str, Any]) -> str:
    """What changes along an upgrade, in one line: the blue-green state, the next version, ready replicas."""
    versions = status.get("versions") or {}
    state = (status.get("blueGreen") or {}).get("state", "-")
    following = str(versions.get("nextVersion") or "-").split("#")[0]
    return (
        f"{status.get('phase', '-')} blueGreen={state} next={following} ready={status.get('readyReplicas')}"
    )


_STARTED = re.compile(r"\bstarted in (\d+(?:\.\d+)?)s\b")
_AUGMENTED = re.compile(r"Quarkus augmentation completed in (\d+)ms")
_PERSISTED = "Server configuration updated and persisted"
# Keycloak 26.7 logs "started" when Quarkus is up, then bootstraps; /health/ready is DOWN until this line.
_BOOTSTRAPPED = "Bootstrap completed in"


def keycloak_log_times(text: str) -> dict[str, float | None]:
    """From a Keycloak container's log read with timestamps (`<RFC 3339> <line>`): its first line; for
    `kc.sh start`, when the first JVM, which re-augments ("Changes detected in configuration. Updating the
    server image."), had persisted the new build, how long that took from the first line, and what Quarkus
    said the augmentation itself took (all None with `start --optimized`, which has no such JVM); when the
    server JVM said Keycloak had started, and in how long it said; when it said its bootstrap completed
    (26.7 and later: after "started", and the moment /health/ready turns UP)."""
    out: dict[str, float | None] = {
        "first_line": None,
        "augmented": None,
        "augmentation_s": None,
        "quarkus_augmentation_s": None,
        "started": None,
        "started_in_s": None,
        "bootstrapped": None,
    }
    first: float | None = None
    for line in text.splitlines():
        stamp, _, rest = line.partition(" ")
        try:
            at = parse_time(stamp)
        except ValueError:
            continue
        if first is None:
            first = out["first_line"] = at
        if (m := _AUGMENTED.search(rest)) and out["quarkus_augmentation_s"] is None:
            out["quarkus_augmentation_s"] = int(m.group(1)) / 1000
        if _PERSISTED in rest and out["augmented"] is None:
            out["augmented"] = at
            out["augmentation_s"] = round(at - first, 3)
        if (m := _STARTED.search(rest)) and "Keycloak" in rest and out["started"] is None:
            out["started"], out["started_in_s"] = at, float(m.group(1))
        if _BOOTSTRAPPED in rest and out["bootstrapped"] is None:
            out["bootstrapped"] = at
    return out


def pod_figures(pod: PodRecord, log: dict[str, float | None], since: float | None = None) -> dict[str, Any]:
    """One pod's start, in seconds from its creation (and from `since`, the image change, when given)."""

    def after(t: float | None, t0: float | None) -> float | None:
        return None if t is None or t0 is None else round(t - t0, 2)

    out: dict[str, Any] = {
        "name": pod.name,
        "image": pod.image,
        "restarts": pod.restarts,
        "ready_s": after(pod.ready, pod.created),  # created -> Ready condition
        "container_started_s": after(pod.started, pod.created),
        "keycloak_started_s": after(log.get("started"), pod.created),  # Keycloak's "started in" line
        "keycloak_started_in_s": log.get("started_in_s"),  # what it said (the second JVM's own start)
        "augmentation_s": log.get("augmentation_s"),  # kc.sh start's first JVM, which re-augments
        "quarkus_augmentation_s": log.get("quarkus_augmentation_s"),  # the augmentation in it, as it said
        "started_to_ready_s": after(pod.ready, log.get("started")),  # Keycloak's bootstrap, then the probes
        "keycloak_bootstrapped_s": after(log.get("bootstrapped"), pod.created),
        "bootstrapped_to_ready_s": after(pod.ready, log.get("bootstrapped")),  # the probes' share
    }
    if since is not None:
        out["created_after_change_s"] = after(pod.created, since)
        out["ready_after_change_s"] = after(pod.ready, since)
    return out


def upgrade_figures(
    attempts: Sequence[signins.Attempt],
    pods: Iterable[PodRecord],
    *,
    offset: float,
    changed: float,
    completed: float | None,
    to_image: str,
) -> dict[str, Any]:
    """Items 1, 2 and 4 of the report from the sign-ins (`at` on the monotonic clock; `offset` turns it into
    epoch seconds), the pods seen and the epoch times of the change and of completion. New pods are the pods
    of `to_image` created after the change."""
    pods = list(pods)
    new = sorted(
        (p for p in pods if p.image == to_image and p.created >= changed - 1), key=lambda p: p.created
    )
    end = completed if completed is not None else float("inf")

    def when(a: signins.Attempt) -> float:
        return a.at + offset

    def rel(t: float | None) -> float | None:
        return None if t is None else round(t - changed, 2)

    during = [a for a in attempts if changed <= when(a) <= end]
    failed = [a for a in attempts if not a.ok]
    served = Counter(image_at(pods, a.served_by, when(a)) or "untraced" for a in attempts)
    # Green serving: the first sign-in after the change that a pod of the new image answered (when it did).
    green = [
        a
        for a in attempts
        if a.ok and when(a) >= changed and image_at(pods, a.served_by, when(a)) == to_image
    ]
    first_green = min((when(a) + a.seconds for a in green), default=None)
    ready_times = [p.ready - p.created for p in new if p.ready is not None]
    slowest = max(ready_times) if ready_times else None
    first_ready = min((p.ready for p in new if p.ready is not None), default=None)
    # The pods Ready when green first answered: all of green's under BlueGreen (it cuts over to a Ready
    # Deployment), the first new one when rolling (it serves as soon as it is Ready).
    gating = [
        p.ready - p.created for p in new if p.ready is not None and first_green and p.ready <= first_green
    ]
    green_serving = rel(first_green)
    return {
        "signins": {
            "attempted": len(attempts),
            "failed": len(failed),
            "attempted_during_upgrade": len(during),
            "failed_during_upgrade": sum(not a.ok for a in during),
            "first_failure_s": rel(when(failed[0])) if failed else None,
            "last_failure_s": rel(when(failed[-1])) if failed else None,
            # Which pod each failure reached (its IP and image then): a timeout and a refusal differ there.
            "failures": [
                f"{rel(when(a))} s: {a.status} {a.error[:120]} (reached {a.served_by or 'untraced'}, "
                f"{image_at(pods, a.served_by, when(a)) or 'no pod'})"
                for a in failed[:5]
            ],
            "answered_by_image": dict(sorted(served.items())),
        },
        "first_new_pod_created_s": rel(new[0].created) if new else None,
        "first_new_pod_ready_s": rel(first_ready),
        "green_serving_s": green_serving,
        "completed_s": rel(completed),
        "slowest_new_pod_ready_s": None if slowest is None else round(slowest, 2),
        "overhead_s": None if green_serving is None or slowest is None else round(green_serving - slowest, 2),
        "overhead_vs_pods_ready_by_then_s": (
            None if green_serving is None or not gating else round(green_serving - max(gating), 2)
        ),
        "first_ready_to_traffic_s": (
            None if first_green is None or first_ready is None else round(first_green - first_ready, 2)
        ),
    }


def median_of(rows: Sequence[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(values), 2) if values else None


# ---- the cluster ------------------------------------------------------------------------------------------


def say(text: str) -> None:
    print(f"\n==> {text}", flush=True)


class Api:
    """The API server as admin (the cluster's client certificate), for polls and the timed change."""

    def __init__(self, cluster: localcluster.Cluster) -> None:
        pki = cluster.state_dir / "pki"
        tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        tls.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        self._http = httpx.Client(base_url=cluster.server, verify=tls, timeout=30)
        self._lock = threading.Lock()

    def get(self, path: str, **params: Any) -> dict[str, Any] | None:
        with self._lock:
            r = self._http.get(path, params=params)
        if r.status_code == 404:
            return None
        r.raise_for_status()
        return dict(r.json())

    def text(self, path: str, **params: Any) -> str:
        with self._lock:
            r = self._http.get(path, params=params)
        return r.text if r.status_code == 200 else ""

    def merge_patch(self, path: str, body: dict[str, Any]) -> None:
        headers = {"Content-Type": "application/merge-patch+json"}
        with self._lock:
            r = self._http.patch(path, content=json.dumps(body), headers=headers)
        r.raise_for_status()

    def close(self) -> None:
        self._http.close()


def keycloak_path(ns: str) -> str:
    return f"/apis/{names.API_VERSION}/namespaces/{ns}/keycloaks/{KEYCLOAK}"


class Watch:
    """Polls a namespace's pods (optionally only those of a label selector) and, with `keycloak`, its
    Keycloak's status, every POLL_SECONDS on a thread of its own."""

    def __init__(self, api: Api, ns: str, *, keycloak: bool = False, selector: str = "") -> None:
        self.api, self.ns, self.keycloak, self.selector = api, ns, keycloak, selector
        self.pods: dict[str, PodRecord] = {}
        self.marks: list[tuple[float, str]] = []  # (epoch, status_mark) whenever it changed
        self.status: dict[str, Any] = {}
        self.target: str | None = None
        self.completed: float | None = None  # epoch of the first poll that saw upgrade_done(target)
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"watch-{ns}", daemon=True)

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def snapshot(self) -> list[PodRecord]:
        with self._lock:
            return list(self.pods.values())

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except (httpx.HTTPError, KeyError, ValueError) as e:
                self.errors.append(repr(e)[:200])
            self._stop.wait(POLL_SECONDS)

    def poll(self) -> None:
        params = {"labelSelector": self.selector} if self.selector else {}
        listing = self.api.get(f"/api/v1/namespaces/{self.ns}/pods", **params) or {}
        now = time.time()
        with self._lock:
            for pod in listing.get("items", []):
                uid = pod["metadata"]["uid"]
                self.pods[uid] = observe_pod(self.pods.get(uid), pod, now)
        if not self.keycloak:
            return
        status = dict(((self.api.get(keycloak_path(self.ns)) or {}).get("status")) or {})
        now = time.time()
        self.status = status
        mark = status_mark(status)
        if not self.marks or self.marks[-1][1] != mark:
            self.marks.append((now, mark))
        if self.target and self.completed is None and upgrade_done(status, self.target):
            self.completed = now


def wait(what: str, ready: Callable[[], Any], timeout: float, interval: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


class Bench:
    def __init__(self, cluster: localcluster.Cluster, api: Api) -> None:
        self.cluster, self.api = cluster, api

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        return self.cluster.kubectl(*args, input=input, check=check, timeout=300).stdout

    def apply(self, obj: dict[str, Any]) -> None:
        self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(obj))

    def get(self, kind: str, name: str, ns: str) -> dict[str, Any]:
        text = self.kubectl("get", kind, name, "-n", ns, "-o", "json", "--ignore-not-found")
        return dict(json.loads(text)) if text.strip() else {}

    def secret(self, name: str, ns: str) -> dict[str, str]:
        data = self.get("secret", name, ns).get("data") or {}
        return {k: base64.b64decode(v).decode() for k, v in data.items()}

    def logs(self, ns: str, pod: str) -> str:
        return self.api.text(
            f"/api/v1/namespaces/{ns}/pods/{pod}/log", timestamps="true", container="keycloak"
        )

    def live_pods(self, ns: str) -> list[dict[str, Any]]:
        return list((self.api.get(f"/api/v1/namespaces/{ns}/pods") or {}).get("items", []))

    def delete_replicated(self, namespaces: Sequence[str]) -> None:
        """Realms and clients, while the operator and Keycloak still run (their finalizer deletes them in
        Keycloak), waited for until gone (two minutes at most)."""
        for ns in namespaces:
            for kind in (names.CLIENT_PLURAL, names.REALM_PLURAL):
                self.kubectl(
                    "delete", f"{kind}.{names.GROUP}", "--all", "-n", ns, "--wait=false", check=False
                )
        deadline = time.monotonic() + 120
        for ns in namespaces:
            for kind in (names.CLIENT_PLURAL, names.REALM_PLURAL):
                while (
                    time.monotonic() < deadline
                    and self.kubectl(
                        "get", f"{kind}.{names.GROUP}", "-n", ns, "-o", "name", check=False
                    ).strip()
                ):
                    time.sleep(1)

    def empty(self, ns: str) -> None:
        """Everything in `ns` deleted but the namespace itself, its pods waited for until gone: the next
        run's JVMs start alone. The namespace stays until the end: deleting a watched namespace takes the
        operator's RoleBinding in it along, usually before its realms are released, and they then keep their
        finalizer (docs/guide/troubleshooting.md). Until 2026-11-24 it also stopped replication in every other
        watched namespace (each round's LIST in the deleted one was refused and aborted the round)."""
        self.delete_replicated([ns])
        for kind in (f"keycloaks.{names.GROUP}", "deployments"):  # PostgreSQL, and anything orphaned
            self.kubectl("delete", kind, "--all", "-n", ns, "--wait=true", "--timeout=180s", check=False)
        wait(f"{ns} emptied", lambda: not self.live_pods(ns), 180, 1)

    def delete_namespaces(self, namespaces: Sequence[str], timeout: float = 300) -> None:
        """Realms and clients first (delete_replicated), then the namespaces, waited for until gone."""
        self.delete_replicated(namespaces)
        for ns in namespaces:
            self.kubectl("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
        deadline = time.monotonic() + timeout
        left = list(namespaces)
        while left and time.monotonic() < deadline:
            left = [ns for ns in left if self.api.get(f"/api/v1/namespaces/{ns}") is not None]
            time.sleep(2)
        for ns in left:  # stuck on a finalizer nobody will remove any more: ours, so ours to clear
            for kind in (names.CLIENT_PLURAL, names.REALM_PLURAL):
                out = self.kubectl("get", f"{kind}.{names.GROUP}", "-n", ns, "-o", "name", check=False)
                for obj in out.split():
                    patch = '{"metadata":{"finalizers":null}}'
                    self.kubectl("patch", obj, "-n", ns, "--type=merge", "-p", patch, check=False)
        if left:
            wait(
                "namespaces gone",
                lambda: all(self.api.get(f"/api/v1/namespaces/{n}") is None for n in left),
                120,
                2,
            )


# ---- the operator -----------------------------------------------------------------------------------------


def operator_processes() -> list[str]:
    """Operators running as local processes (an integration test's, a developer's): they may watch every
    namespace, and two operators acting on one Keycloak would measure nothing."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            text = b" ".join((proc / "cmdline").read_bytes().split(b"\0")).decode(errors="replace")
        except OSError:
            continue
        if "keycloak_operator" in text and " run" in text:
            found.append(f"process {proc.name}: {text[:120]}")
    return found


def operator_pods(bench: Bench) -> list[tuple[str, str, str, bool]]:
    """(namespace, release, image, watches every namespace) of each live operator pod in the cluster."""
    repository = app_images.operator_image_ref().rsplit(":", 1)[0]
    found = []
    for pod in (bench.api.get("/api/v1/pods") or {}).get("items", []):
        if pod["metadata"].get("deletionTimestamp"):
            continue
        for c in pod["spec"].get("containers", []):
            if c.get("image", "").startswith(repository):
                release = pod["metadata"].get("labels", {}).get("app.kubernetes.io/instance", "")
                everywhere = "--all-namespaces" in (c.get("args") or [])
                found.append((pod["metadata"]["namespace"], release, c["image"], everywhere))
    return found


class Operator:
    """The chart's operator as a pod on the real node, watching only `namespaces`; or, when a release of
    the chart from this checkout already watches every namespace (`make demo` leaves one), that one: a
    second operator acting on the same Keycloaks would measure nothing."""

    def __init__(
        self, bench: Bench, image: str, namespaces: Sequence[str], existing: tuple[str, str] | None = None
    ) -> None:
        self.bench, self.image, self.existing = bench, image, existing
        self.release = existing[1] if existing else f"kcop-bench-{uuid.uuid4().hex[:6]}"
        self.namespace = existing[0] if existing else f"{self.release}-system"
        self.watched = list(namespaces)

    def describe(self) -> str:
        if self.existing:
            return (
                f"the chart's pod, release {self.release} in {self.namespace} (already running), {self.image}"
            )
        return (
            f"the chart's pod, release {self.release} watching only the benchmark's namespaces, {self.image}"
        )

    def install(self) -> None:
        if self.existing:
            return
        watched = "watchNamespaces={" + ",".join(self.watched) + "}"
        helm.install_operator(
            self.bench.cluster.kubeconfig, self.release, self.namespace, self.image, watched
        )
        self.bench.kubectl(
            "rollout", "status", f"deployment/{self.release}", "-n", self.namespace, "--timeout=180s"
        )

    def uninstall(self) -> None:
        if self.existing:
            return
        argv = [str(helm.ensure_helm()), "uninstall", self.release, "--namespace", self.namespace]
        argv.append(f"--kubeconfig={self.bench.cluster.kubeconfig}")
        subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
        self.bench.delete_namespaces([self.namespace])


def choose_operator(bench: Bench, image: str, namespaces: Sequence[str]) -> Operator:
    """Ours, unless one of this checkout's image already watches every namespace; refuses (exits) when an
    operator that would act on the benchmark's namespaces is not one it can use."""
    processes = operator_processes()
    if processes:
        sys.exit("a keycloak-operator process is running and may act on every namespace; stop it first:\n  "
                 + "\n  ".join(processes))  # fmt: skip
    everywhere = {(ns, release, img) for ns, release, img, all_ns in operator_pods(bench) if all_ns}
    if len(everywhere) > 1 or any(img != image for _, _, img in everywhere):
        sys.exit(f"operators watching every namespace, not one of {image}: {sorted(everywhere)}")
    if everywhere:
        ns, release, _ = everywhere.pop()
        print(
            f"   release {release} in {ns} already watches every namespace: the benchmark uses it", flush=True
        )
        return Operator(bench, image, namespaces, existing=(ns, release))
    return Operator(bench, image, namespaces)


# ---- one upgrade under load -------------------------------------------------------------------------------


def keycloak_resource(ns: str, image: str, strategy: str) -> dict[str, Any]:
    return real_keycloak.keycloak(
        KEYCLOAK,
        ns,
        image,
        upgradePolicy={"strategy": strategy},
        cacheIsolation={"autoRevision": True},
    )


def running(bench: Bench, ns: str, version: str) -> bool:
    status = bench.get(f"keycloaks.{names.GROUP}", KEYCLOAK, ns).get("status") or {}
    return status.get("phase") == "Running" and upgrade_done(status, version)


def sign_in_setup(bench: Bench, ns: str) -> signins.Login:
    """A realm and a confidential client, replicated by the operator, and a user made as the admin."""
    bench.apply(
        {
            "apiVersion": names.API_VERSION,
            "kind": names.REALM_KIND,
            "metadata": {"name": REALM, "namespace": ns},
            "spec": {"server": {"keycloak": {"name": KEYCLOAK}}, "realmName": REALM},
        }
    )
    bench.apply(
        {
            "apiVersion": names.API_VERSION,
            "kind": names.CLIENT_KIND,
            "metadata": {"name": CLIENT, "namespace": ns},
            "spec": {
                "realm": {"name": REALM},
                "clientId": CLIENT,
                "standardFlowEnabled": False,
                "serviceAccountsEnabled": True,
                "directAccessGrantsEnabled": True,
            },
        }
    )

    def replicated(kind: str, name: str) -> bool:
        return (bench.get(f"{kind}.{names.GROUP}", name, ns).get("status") or {}).get("phase") == "Ready"

    for kind, name in ((names.REALM_PLURAL, REALM), (names.CLIENT_PLURAL, CLIENT)):
        wait(f"{kind} {name} replicated", functools.partial(replicated, kind, name), timeout=180)
    service = bench.get("service", names.public_service(KEYCLOAK), ns)
    url = f"http://{service['spec']['clusterIP']}:8080"
    client_secret = bench.secret(names.client_secret(CLIENT), ns)["clientSecret"]
    real_keycloak.create_user(url, bench.secret(names.admin_secret(KEYCLOAK), ns), REALM, USER, PASSWORD)
    token_url = f"{url}/realms/{REALM}/protocol/openid-connect/token"
    form = {"grant_type": "client_credentials", "client_id": CLIENT, "client_secret": client_secret}
    wait("a token", lambda: real_keycloak.token(token_url, form), timeout=60)
    return signins.Login(token_url, CLIENT, client_secret, USER, PASSWORD)


def one_upgrade(
    bench: Bench, ns: str, strategy: str, images: dict[str, str], operator_ns: str
) -> dict[str, Any]:
    started = time.monotonic()
    print(f"   PostgreSQL and Keycloak {FROM_VERSION} x2 in {ns}", flush=True)
    for obj in real_keycloak.postgres(ns, images["postgres"]):
        bench.apply(obj)
    bench.apply(keycloak_resource(ns, images["from"], strategy))
    try:
        wait(f"Keycloak {FROM_VERSION} Running", lambda: running(bench, ns, FROM_VERSION), 900, interval=2)
        from_running = round(time.monotonic() - started, 1)
        print(f"   Running after {from_running:.0f} s; realm, client and user", flush=True)
        login = sign_in_setup(bench, ns)
    except TimeoutError as e:
        raise Stuck(str(e), diagnose(bench, ns, operator_ns)) from None

    offset = time.time() - time.monotonic()
    load = signins.SignIns(login, max_requests=200_000, max_seconds=UPGRADE_TIMEOUT + 300).start()
    changed: float | None = None
    error = ""
    with Watch(bench.api, ns, keycloak=True) as watch:
        try:
            wait("sign-ins before the change", lambda: load.count() >= 20, timeout=60, interval=0.2)
            watch.target = TO_VERSION
            bench.api.merge_patch(keycloak_path(ns), {"spec": {"image": images["to"]}})
            changed = time.time()
            print(f"   {strategy}: image -> {TO_VERSION} (sign-ins so far: {load.count()})", flush=True)
            last, printed = "", 0.0
            while watch.completed is None:
                if time.time() - changed > UPGRADE_TIMEOUT:
                    error = f"the {strategy} upgrade did not complete in {UPGRADE_TIMEOUT:.0f} s"
                    print(f"   {error}: what the pods were doing is in the results", flush=True)
                    break
                mark = status_mark(watch.status)
                if mark != last or time.time() - printed >= 15:  # each change, else every 15 s
                    failed = len(load.failures())
                    print(
                        f"   {time.time() - changed:6.1f}s  {mark}; sign-ins {load.count()}, failed {failed}",
                        flush=True,
                    )
                    last, printed = mark, time.time()
                time.sleep(0.5)
            if watch.completed is not None:
                settled = watch.completed + SETTLE_SECONDS
                print(f"   {watch.completed - changed:6.1f}s  completed", flush=True)
                wait(
                    "sign-ins after the upgrade",
                    lambda: sum(a.at + offset > settled for a in list(load.attempts)) >= 20,
                    timeout=120,
                    interval=0.5,
                )
        finally:
            attempts = load.stop()
    pods = watch.snapshot()
    assert changed is not None
    figures = upgrade_figures(
        attempts, pods, offset=offset, changed=changed, completed=watch.completed, to_image=images["to"]
    )
    new = [p for p in pods if p.image == images["to"] and p.created >= changed - 1]
    live = {p["metadata"]["uid"] for p in bench.live_pods(ns)}
    figures["new_pods"] = [
        pod_figures(p, keycloak_log_times(bench.logs(ns, p.name)) if p.uid in live else {}, since=changed)
        for p in sorted(new, key=lambda p: p.created)
    ]
    figures["timeline"] = [(round(t - changed, 2), mark) for t, mark in watch.marks]
    figures["poll_errors"] = watch.errors[:5]
    if error:
        figures["error"] = error
        figures["diagnosis"] = {"status": watch.status, **diagnose(bench, ns, operator_ns)}
    return {
        "strategy": strategy,
        "namespace": ns,
        "seconds": round(time.monotonic() - started),
        "from_version_running_s": from_running,  # 2 pods of FROM on an empty database, from the apply
        **figures,
    }


class Stuck(RuntimeError):
    """A Keycloak that never came up; `diagnosis` says what its pods were doing."""

    def __init__(self, message: str, diagnosis: dict[str, Any]) -> None:
        super().__init__(message)
        self.diagnosis = diagnosis


def diagnose(bench: Bench, ns: str, operator_ns: str = "") -> dict[str, Any]:
    """What the namespace's pods were doing, with their last log lines, its latest events, and the errors
    the operator (its pods in `operator_ns`) logged last."""
    pods = []
    for pod in bench.live_pods(ns):
        name, status = pod["metadata"]["name"], pod.get("status") or {}
        container: dict[str, Any] = next(iter(status.get("containerStatuses") or []), {})
        log = bench.api.text(
            f"/api/v1/namespaces/{ns}/pods/{name}/log",
            container=pod["spec"]["containers"][0]["name"],
            tailLines="8",
        )
        pods.append(
            {
                "name": name,
                "image": pod["spec"]["containers"][0]["image"],
                "phase": status.get("phase"),
                "ready": container.get("ready"),
                "restarts": container.get("restartCount"),
                "state": container.get("state"),
                "last_state": container.get("lastState"),
                "log_tail": [line[:300] for line in log.splitlines()[-8:]],
            }
        )
    items = (bench.api.get(f"/api/v1/namespaces/{ns}/events") or {}).get("items", [])
    items.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
    events = [
        f"{e.get('type')} {e.get('reason')} {e['involvedObject'].get('name')}: {e.get('message', '')[:200]}"
        for e in items[-20:]
    ]
    replicated = {}
    for kind in (names.REALM_PLURAL, names.CLIENT_PLURAL):
        path = f"/apis/{names.API_VERSION}/namespaces/{ns}/{kind}"
        for obj in (bench.api.get(path) or {}).get("items", []):
            replicated[f"{kind}/{obj['metadata']['name']}"] = obj.get("status")
    errors: list[str] = []
    listing = bench.api.get(f"/api/v1/namespaces/{operator_ns}/pods") if operator_ns else None
    for pod in (listing or {}).get("items", []):
        log = bench.api.text(
            f"/api/v1/namespaces/{operator_ns}/pods/{pod['metadata']['name']}/log", tailLines="400"
        )
        errors += [
            line[:300] for line in log.splitlines() if "ERROR" in line or line.startswith(("Traceback", " "))
        ]
    return {"pods": pods, "events": events, "replicated": replicated, "operator_errors": errors[-30:]}


# ---- standalone Ready times -------------------------------------------------------------------------------


def standalone_deployment(ns: str, name: str, image: str, args: list[str], replicas: int) -> dict[str, Any]:
    """The Deployment the operator renders for a Keycloak here (same pod environment, probes and placement),
    under another name and labels, with no owner, running `image` with `args`."""
    resource = keycloak_resource(ns, image, "Recreate")
    spec = KeycloakSpec.model_validate(resource["spec"])
    owner = children.Owner(name=KEYCLOAK, namespace=ns, uid="")
    rendered = render_deployment(owner, spec, image=image, track=names.TRACKS[0], version=image)
    labels = {"app": name}
    rendered["metadata"] = {"name": name, "namespace": ns, "labels": labels}
    rendered["spec"]["replicas"] = replicas
    rendered["spec"]["selector"] = {"matchLabels": labels}
    rendered["spec"]["template"]["metadata"] = {"labels": labels}
    rendered["spec"]["template"]["spec"]["containers"][0]["args"] = args
    return dict(rendered)


def measure_ready(
    bench: Bench, ns: str, name: str, image: str, args: list[str], replicas: int
) -> list[dict[str, Any]]:
    """Starts the standalone Deployment, waits for its pods Ready, reads their figures, deletes it."""
    bench.apply(standalone_deployment(ns, name, image, args, replicas))
    with Watch(bench.api, ns, selector=f"app={name}") as watch:

        def all_ready() -> bool:
            pods = watch.snapshot()
            return len(pods) == replicas and all(p.ready is not None for p in pods)

        wait(f"{name}: {replicas} pods Ready", all_ready, timeout=900, interval=1)
    pods = sorted(watch.snapshot(), key=lambda p: p.created)
    out = [pod_figures(p, keycloak_log_times(bench.logs(ns, p.name))) for p in pods]
    bench.kubectl("delete", "deployment", name, "-n", ns, "--wait=true", "--timeout=120s")
    wait(f"{name}'s pods gone", lambda: only_postgres(bench, ns), 180, 1)
    return out


def only_postgres(bench: Bench, ns: str) -> bool:
    return all(p["metadata"]["labels"].get("app") == "postgres" for p in bench.live_pods(ns))


def ready_times(bench: Bench, ns: str, images: dict[str, str], runs: int, optimized: bool) -> list[dict]:
    for obj in real_keycloak.postgres(ns, images["postgres"]):
        bench.apply(obj)
    password = secrets.token_urlsafe(16)
    bench.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": names.admin_secret(KEYCLOAK), "namespace": ns},
            "stringData": {"username": "admin", "password": password},
        }
    )
    rows = []
    print(
        "   an empty database first: one pod of `start` creates the schema (measured, not compared)",
        flush=True,
    )
    pods = measure_ready(bench, ns, "schema", images["to"], ["start"], 1)
    rows.append({"variant": "start, empty database", "image": images["to"], "args": ["start"], "pods": pods})
    variants = [("start", images["stock"], ["start"])]
    if optimized:
        variants.append(("start --optimized", images["to"], ["start", "--optimized"]))
    for run in range(1, runs + 1):
        for variant, image, args in variants:
            name = "optimized" if "--optimized" in args else "start"
            pods = measure_ready(bench, ns, name, image, args, 2)
            print(
                f"   {variant:<18} run {run}: Ready in " + ", ".join(f"{p['ready_s']} s" for p in pods),
                flush=True,
            )
            row: dict[str, Any] = {"variant": variant, "image": image, "args": args, "run": run, "pods": pods}
            if "--optimized" in args:
                row["note"] = OPTIMIZED_NOTE
            rows.append(row)
    return rows


# ---- report -----------------------------------------------------------------------------------------------


def real_node_ready(cluster: localcluster.Cluster) -> bool:
    """The real node is up: a running cluster and a Ready node are used as they are, never restarted."""
    proc = cluster.kubectl("get", "node", NODE_NAME, "-o", "json", check=False)
    if proc.returncode != 0:
        return False
    conditions = json.loads(proc.stdout).get("status", {}).get("conditions", [])
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def machine() -> str:
    model = platform.processor()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            mem = round(int(line.split()[1]) / (1024 * 1024))
    return f"{os.cpu_count()} CPUs, {model}, {mem} GiB"


def fmt(value: float | None, unit: str = " s") -> str:
    return "-" if value is None else f"{value:.1f}{unit}"


UPGRADE_FIGURES = (
    "green_serving_s",
    "completed_s",
    "slowest_new_pod_ready_s",
    "overhead_s",
    "overhead_vs_pods_ready_by_then_s",
    "first_ready_to_traffic_s",
    "first_new_pod_created_s",
)


def summary(results: dict[str, Any]) -> dict[str, Any]:
    """Medians over the runs: per strategy, and per standalone start."""
    out: dict[str, Any] = {}
    for strategy in sorted({r["strategy"] for r in results["upgrades"]}):
        rows = [r for r in results["upgrades"] if r["strategy"] == strategy]
        pods = [p for r in rows for p in r["new_pods"]]
        out[strategy] = {
            "runs": len(rows),
            "signins_attempted": sum(r["signins"]["attempted"] for r in rows),
            "signins_failed": sum(r["signins"]["failed"] for r in rows),
            **{k: median_of(rows, k) for k in UPGRADE_FIGURES},
            "new_pod_ready_s": median_of(pods, "ready_s"),
            "new_pod_keycloak_started_s": median_of(pods, "keycloak_started_s"),
            "new_pod_augmentation_s": median_of(pods, "augmentation_s"),
            "new_pod_bootstrapped_to_ready_s": median_of(pods, "bootstrapped_to_ready_s"),
        }
    for variant in dict.fromkeys(r["variant"] for r in results.get("ready", [])):
        pods = [p for r in results["ready"] if r["variant"] == variant for p in r["pods"]]
        out[f"standalone {variant}"] = {
            "pods": len(pods),
            "ready_s": median_of(pods, "ready_s"),
            "ready_s_worst": max((p["ready_s"] for p in pods if p["ready_s"] is not None), default=None),
            "keycloak_started_s": median_of(pods, "keycloak_started_s"),
            "keycloak_started_in_s": median_of(pods, "keycloak_started_in_s"),
            "augmentation_s": median_of(pods, "augmentation_s"),
            "started_to_ready_s": median_of(pods, "started_to_ready_s"),
            "bootstrapped_to_ready_s": median_of(pods, "bootstrapped_to_ready_s"),
        }
    return out


def print_tables(results: dict[str, Any]) -> None:
    print(
        f"\n{results['machine']}; Keycloak {FROM_VERSION} -> {TO_VERSION}, 2 replicas, PostgreSQL, sign-ins"
    )
    header = (
        f"{'strategy':<10} {'run':>3} {'sign-ins':>8} {'failed':>6} {'green serving':>13} {'completed':>9} "
        f"{'slowest Ready':>13} {'overhead':>8} {'1st Ready->traffic':>18}"
    )
    print(header)
    for r in results["upgrades"]:
        s = r["signins"]
        print(
            f"{r['strategy']:<10} {r['run']:>3} {s['attempted']:>8} {s['failed']:>6} "
            f"{fmt(r['green_serving_s']):>13} {fmt(r['completed_s']):>9} "
            f"{fmt(r['slowest_new_pod_ready_s']):>13} {fmt(r['overhead_s']):>8} "
            f"{fmt(r['first_ready_to_traffic_s']):>18}"
        )
    for r in results["upgrades"]:
        if r.get("error"):
            print(f"{r['strategy']} run {r['run']}: {r['error']} (diagnosis in the JSON)")
    if results.get("error"):
        print(f"stopped early: {results['error']}")
    print(
        "\nReady time of a real Keycloak (pod created -> Ready; Keycloak's 'started' log line; kc.sh start's "
        "re-augmentation):"
    )
    print(f"{'pods':<52} {'n':>2} {'Ready (median)':>14} {'worst':>6} {'KC started':>10} {'augment':>8}")
    rows: list[tuple[str, list[dict[str, Any]]]] = []
    for strategy in dict.fromkeys(r["strategy"] for r in results["upgrades"]):
        pods = [p for r in results["upgrades"] if r["strategy"] == strategy for p in r["new_pods"]]
        rows.append((f"{TO_VERSION} start, operator's new pods ({strategy})", pods))
    for variant in dict.fromkeys(r["variant"] for r in results.get("ready", [])):
        pods = [p for r in results["ready"] if r["variant"] == variant for p in r["pods"]]
        rows.append((f"{TO_VERSION} {variant}, standalone", pods))
    for label, pods in rows:
        worst = max((p["ready_s"] for p in pods if p["ready_s"] is not None), default=None)
        print(
            f"{label:<52} {len(pods):>2} {fmt(median_of(pods, 'ready_s')):>14} {fmt(worst):>6} "
            f"{fmt(median_of(pods, 'keycloak_started_s')):>10} {fmt(median_of(pods, 'augmentation_s')):>8}"
        )
    if any("note" in r for r in results.get("ready", [])):
        print(f"start --optimized: {OPTIMIZED_NOTE}.")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=1, help="runs of each strategy and of each standalone start")
    p.add_argument(
        "--strategies", nargs="+", default=["BlueGreen", "Recreate"], choices=["BlueGreen", "Recreate"]
    )
    p.add_argument("--no-optimized", action="store_true", help="skip the standalone `start --optimized`")
    p.add_argument("--no-standalone", action="store_true", help="skip the standalone Ready measurements")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "real_upgrade.json")
    return p


def interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parser().parse_args(argv)
    # Interrupted or terminated, it still deletes what it made (a shell's background job ignores SIGINT,
    # and Python would keep ignoring it).
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    wall = time.monotonic()
    say("Local cluster and its real node")
    cluster = localcluster.current()
    if cluster is None or not real_node_ready(cluster):
        cluster = localcluster.ensure_running()  # starts (and builds) what is missing, as `make demo` does
    api = Api(cluster)
    bench = Bench(cluster, api)
    bench.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "deploy" / "crds"))

    say(
        f"Images (built here and cached; Keycloak built with the pods' options): "
        f"Keycloak {FROM_VERSION}, {TO_VERSION}, PostgreSQL, the operator"
    )
    images = {
        "from": app_images.keycloak(cluster, FROM_VERSION),
        "to": app_images.keycloak(cluster, TO_VERSION),
        "postgres": app_images.postgres(cluster),
    }
    operator_image = app_images.operator(cluster)
    if not args.no_standalone:
        say(f"Keycloak {TO_VERSION} as the stock image (never built), for the standalone `start`")
        images["stock"] = app_images.keycloak_stock(cluster, TO_VERSION, STOCK_REF)

    tag = uuid.uuid4().hex[:5]
    plan = [
        (s, run, f"bench-{tag}-{s.lower()}-{run}") for run in range(1, args.runs + 1) for s in args.strategies
    ]
    ready_ns = f"bench-{tag}-ready"
    neighbours = [
        f"{p['metadata']['namespace']}/{p['metadata']['name']}"
        for p in (api.get("/api/v1/pods", fieldSelector=f"spec.nodeName={NODE_NAME}") or {}).get("items", [])
        if p["metadata"]["namespace"] != "kube-system"
    ]
    results: dict[str, Any] = {
        "machine": machine(),
        "command": "uv run python bench/bench_real_upgrade.py "
        + " ".join(sys.argv[1:] if argv is None else argv),
        "date": dt.date.today().isoformat(),
        "from": FROM_VERSION,
        "to": TO_VERSION,
        "replicas": 2,
        "other_pods_on_the_real_node": neighbours,
        "upgrades": [],
        "ready": [],
    }
    if neighbours:
        print(f"   note: other pods on the real node share its 2 cores: {', '.join(neighbours)}", flush=True)
    operator = choose_operator(bench, operator_image, [ns for _, _, ns in plan])
    results["operator"] = operator.describe()
    try:
        upgrades(bench, operator, plan, images, results)
        if not args.no_standalone:
            say(
                f"Standalone Ready times ({ready_ns}, not through the operator): `start`, `start --optimized`"
            )
            try:
                bench.kubectl("create", "namespace", ready_ns)
                results["ready"] = ready_times(bench, ready_ns, images, args.runs, not args.no_optimized)
            finally:
                bench.delete_namespaces([ready_ns])
    except BaseException as e:
        results["error"] = repr(e)[:500]  # what was measured before it is kept
        if isinstance(e, Stuck):
            results["diagnosis"] = e.diagnosis
        raise
    finally:
        api.close()
        results["summary"] = summary(results)
        results["seconds"] = round(time.monotonic() - wall)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
        print_tables(results)
        print(f"\nwrote {args.out} ({results['seconds']} s in all)")
    return results


def upgrades(
    bench: Bench,
    operator: Operator,
    plan: Sequence[tuple[str, int, str]],
    images: dict[str, str],
    results: dict[str, Any],
) -> None:
    made: list[str] = []
    try:
        for ns in operator.watched:
            bench.kubectl("create", "namespace", ns)
            made.append(ns)
        say(f"The operator: {operator.describe()}")
        operator.install()
        for strategy, run, ns in plan:
            say(f"{strategy} upgrade {FROM_VERSION} -> {TO_VERSION} under sign-ins, run {run}")
            row = one_upgrade(bench, ns, strategy, images, operator.namespace)
            row["run"] = run
            results["upgrades"].append(row)
            s = row["signins"]
            print(
                f"   {s['attempted']} sign-ins, {s['failed']} failed; green serving "
                f"{fmt(row['green_serving_s'])}, completed {fmt(row['completed_s'])}, slowest new pod Ready "
                f"{fmt(row['slowest_new_pod_ready_s'])}",
                flush=True,
            )
            bench.empty(ns)  # frees its JVMs before the next run starts
    finally:
        say("Cleaning up: the upgrades' namespaces, then the operator's release")
        bench.delete_namespaces(made)
        operator.uninstall()


if __name__ == "__main__":
    main()
