"""Blue-green cutover latency and operator overhead, over N real upgrades on the local control plane.

    uv run python bench/bench_cutover.py [--upgrades 10] [--boot 5] [--replicas 3]

For each upgrade it polls the API server every 20 ms and records: when green's Deployment first had every
replica Ready, when the public Service's selector moved to green's track, and when the upgrade reached
Completed. Cutover latency = selector switched - green fully Ready. Overhead = (Completed - spec changed) -
green's boot time (the kwok ready delay). Prints median and worst; not a test, so it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import ssl
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import localcluster  # noqa: E402
from keycloak_operator.kernel import names  # noqa: E402
from localcluster import manifests, stages  # noqa: E402
from localcluster.operator_process import OperatorProcess  # noqa: E402

IMAGE = "quay.io/keycloak/keycloak"


def client(cluster: localcluster.Cluster) -> httpx.Client:
    pki = cluster.state_dir / "pki"
    tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    tls.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    return httpx.Client(base_url=cluster.server, verify=tls)


def one_upgrade(
    http: httpx.Client, cluster: localcluster.Cluster, ns: str, image: str, replicas: int
) -> tuple:
    kc_path = f"/apis/{names.API_VERSION}/namespaces/{ns}/keycloaks/bench"
    green_path = f"/apis/apps/v1/namespaces/{ns}/deployments/{names.deployment('bench', green=True)}"
    svc_path = f"/api/v1/namespaces/{ns}/services/{names.public_service('bench')}"
    body = manifests.keycloak(
        "bench",
        ns,
        image=image,
        replicas=replicas,
        cacheIsolation={"autoRevision": True},
        upgradePolicy={"strategy": "BlueGreen", "drainDelay": "0s"},
    )
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(body))
    changed = time.monotonic()
    green_ready = switched = completed = None
    green_track = None
    while completed is None and time.monotonic() - changed < 300:
        now = time.monotonic()
        green = http.get(green_path)
        if green.status_code == 200:
            g = green.json()
            green_track = g["metadata"]["labels"].get(names.LABEL_TRACK)
            if green_ready is None and (g.get("status") or {}).get("readyReplicas") == replicas:
                green_ready = now
        selector = http.get(svc_path).json()["spec"]["selector"]
        if switched is None and green_track and selector.get(names.LABEL_TRACK) == green_track:
            switched = now
        bg = (http.get(kc_path).json().get("status") or {}).get("blueGreen") or {}
        if bg.get("state") == "Completed" and bg.get("greenImage") == image:
            completed = now
        time.sleep(0.02)
    if None in (green_ready, switched, completed):
        raise RuntimeError(f"upgrade to {image} did not complete: {green_ready=} {switched=} {completed=}")
    return switched - green_ready, completed - changed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upgrades", type=int, default=10)
    parser.add_argument("--boot", type=float, default=5.0, help="simulated Keycloak boot time (s)")
    parser.add_argument("--replicas", type=int, default=3)
    args = parser.parse_args()

    cluster = localcluster.ensure_running(real_node=False)  # kwok only
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "deploy" / "crds"))
    ns = f"bench-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", ns)
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(manifests.db_secret(ns)))
    images = [
        f"{IMAGE}:26.7.{i}" for i in range(args.upgrades + 1)
    ]  # patch releases: blue-green on one database
    for image in images[1:]:
        stages.apply_ready_delay(cluster.kubeconfig, image, args.boot)
    operator = OperatorProcess(cluster.kubeconfig, Path(tempfile.mkdtemp()), resync_seconds=60)
    operator.start("--namespace", ns)
    latencies, overheads = [], []
    try:
        with client(cluster) as http:
            body = manifests.keycloak(
                "bench", ns, image=images[0], replicas=args.replicas, upgradePolicy={"strategy": "BlueGreen"}
            )
            cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(body))
            time.sleep(5)
            for image in images[1:]:
                latency, total = one_upgrade(http, cluster, ns, image, args.replicas)
                latencies.append(latency)
                overheads.append(total - args.boot)
                print(
                    f"{image}: cutover {latency * 1000:.0f} ms after green Ready, upgrade {total:.2f} s",
                    flush=True,
                )
    finally:
        operator.stop()
        for image in images[1:]:
            stages.remove(cluster.kubeconfig, image)
        cluster.kubectl("delete", "namespace", ns, "--wait=false")
    print(
        f"\n{len(latencies)} upgrades, {args.replicas} replicas, boot {args.boot:.0f} s, "
        f"{os.cpu_count()} cores"
    )
    print(
        f"cutover latency: median {statistics.median(latencies) * 1000:.0f} ms, "
        f"worst {max(latencies) * 1000:.0f} ms"
    )
    print(f"operator overhead: median {statistics.median(overheads):.2f} s, worst {max(overheads):.2f} s")


if __name__ == "__main__":
    main()
