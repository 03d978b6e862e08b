"""Replication at scale against the real Keycloak: first sync of N clients in M namespaces, then a quiet
resync.

    uv run python bench/bench_replication_sync.py [--clients 1000] [--namespaces 50] [--quiet 25]
        [--rate 50] [--namespace-rate 10]

One realm (external mode, a Keycloak 26.7.3 process from the Maven Central distribution) allows clients from
M namespaces; N KeycloakClients (half confidential, so N/2 client Secrets are written) are created at once.
First sync = from the first client created until every client is in Keycloak and every resource is Ready.
Quiet = `--quiet` seconds with nothing changing (the operator resyncs every 10 s): Keycloak admin writes
(Keycloak's own HTTP metrics) and Kubernetes writes on realms, clients, Secrets and Events (kube-apiserver's
metrics). The operator's write rate limits are the flags. Not a test: prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import platform
import ssl
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import localcluster  # noqa: E402
from keycloak_operator.core import names  # noqa: E402
from localcluster.keycloak import KeycloakProcess  # noqa: E402
from tests.integration.support.keycloak_api import KeycloakApi  # noqa: E402
from tests.integration.support.metrics import writes  # noqa: E402
from tests.integration.support.operator_process import OperatorProcess  # noqa: E402

GROUP_PATH = f"/apis/{names.API_VERSION}"


def api_client(cluster: localcluster.Cluster) -> httpx.Client:
    pki = cluster.state_dir / "pki"
    tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    tls.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
    return httpx.Client(base_url=cluster.server, verify=tls, timeout=60)


def post(http: httpx.Client, path: str, body: dict) -> None:
    r = http.post(path, json=body)
    if r.status_code >= 300:
        raise SystemExit(f"POST {path}: {r.status_code} {r.text[:300]}")


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--clients", type=int, default=1000)
    p.add_argument("--namespaces", type=int, default=50)
    p.add_argument("--quiet", type=float, default=25.0)
    p.add_argument("--rate", type=float, default=50.0)
    p.add_argument("--namespace-rate", type=float, default=10.0)
    args = p.parse_args()

    cluster = localcluster.ensure_running(real_node=False)  # kwok only
    cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "deploy" / "crds"))
    http = api_client(cluster)
    run = uuid.uuid4().hex[:6]
    home = f"rb-{run}-home"
    spaces = [f"rb-{run}-{i:03d}" for i in range(args.namespaces)]
    kc = KeycloakProcess(args=["--metrics-enabled=true"])
    operator = OperatorProcess(
        cluster.kubeconfig,
        Path(tempfile.mkdtemp(prefix="bench-repl-")),
        resync_seconds=10,
        extra_env={
            "KCOP_REPLICATION_WRITES_PER_SECOND": str(args.rate),
            "KCOP_REPLICATION_NAMESPACE_WRITES_PER_SECOND": str(args.namespace_rate),
        },
    )
    try:
        kc.start()
        keycloak = KeycloakApi(kc)
        operator.start("--all-namespaces")
        for ns in [home, *spaces]:
            post(http, "/api/v1/namespaces", {"metadata": {"name": ns}})
        secret = {
            "metadata": {"name": "adm"},
            "stringData": {"username": kc.admin_username, "password": kc.admin_password},
        }
        post(http, f"/api/v1/namespaces/{home}/secrets", secret)
        realm = {
            "apiVersion": names.API_VERSION,
            "kind": names.REALM_KIND,
            "metadata": {"name": "main"},
            "spec": {
                "server": {"external": {"url": kc.url, "adminSecret": {"name": "adm"}}},
                "realmName": f"bench-{run}",
                "clientNamespaces": spaces,
            },
        }
        post(http, f"{GROUP_PATH}/namespaces/{home}/{names.REALM_PLURAL}", realm)
        deadline = time.monotonic() + 120
        while keycloak.realm(f"bench-{run}") is None:
            if time.monotonic() > deadline:
                raise SystemExit("realm never appeared in Keycloak")
            time.sleep(0.5)

        admin_before = keycloak.admin_writes()
        started = time.monotonic()
        for i in range(args.clients):
            ns = spaces[i % len(spaces)]
            body = {
                "apiVersion": names.API_VERSION,
                "kind": names.CLIENT_KIND,
                "metadata": {"name": f"c{i:04d}"},
                "spec": {
                    "realm": {"name": "main", "namespace": home},
                    "clientId": f"c{i:04d}",
                    "publicClient": i % 2 == 0,
                    "redirectUris": [f"https://app-{i}.example/*"],
                },
            }
            post(http, f"{GROUP_PATH}/namespaces/{ns}/{names.CLIENT_PLURAL}", body)
        created = time.monotonic() - started

        wanted = set(spaces)
        deadline = time.monotonic() + 1800
        while True:
            items = http.get(f"{GROUP_PATH}/{names.CLIENT_PLURAL}").json()["items"]
            ready = sum(
                1
                for c in items
                if c["metadata"]["namespace"] in wanted and (c.get("status") or {}).get("phase") == "Ready"
            )
            if ready == args.clients:
                break
            if time.monotonic() > deadline:
                raise SystemExit(
                    f"only {ready}/{args.clients} Ready after 30 minutes; see {operator.log_path}"
                )
            time.sleep(0.5)
        first_sync = time.monotonic() - started
        in_keycloak = len(keycloak.clients(f"bench-{run}"))
        first_writes = keycloak.admin_writes() - admin_before

        time.sleep(12)  # the rounds the status writes triggered, and one resync
        admin_quiet = keycloak.admin_writes()
        kube_quiet = http.get("/metrics").text
        time.sleep(args.quiet)
        quiet_admin = keycloak.admin_writes() - admin_quiet
        kube_writes = writes(
            kube_quiet,
            http.get("/metrics").text,
            {names.REALM_PLURAL, names.CLIENT_PLURAL, "secrets", "events"},
        )

        print(
            f"\nmachine: {os.cpu_count()} CPUs, {cpu_model()}; Keycloak {kc.version}; "
            f"limits {args.rate}/s global, {args.namespace_rate}/s per namespace"
        )
        print("| figure | value |\n|---|---|")
        print(f"| clients created in Kubernetes (API POSTs) | {args.clients} in {created:.1f} s |")
        scale = f"{args.clients} clients in {args.namespaces} namespaces"
        print(f"| first sync, {scale}, all Ready | {first_sync:.1f} s |")
        print(f"| clients in the realm (incl. Keycloak's 6 built-in) | {in_keycloak} |")
        print(f"| Keycloak admin writes during the first sync | {first_writes} |")
        print(f"| Keycloak admin writes in {args.quiet:.0f} s quiet (resync every 10 s) | {quiet_admin} |")
        # The operator writes with POST/PUT/PATCH; DELETEs in this window come from the namespace controller
        # retrying namespaces of earlier runs (the apiserver's metrics do not say who asked).
        ours = sum(v for k, v in kube_writes.items() if k[0] != "DELETE")
        print(f"| Kubernetes POST/PUT/PATCH on realms, clients, Secrets, Events, same window | {ours} |")
        if kube_writes:
            print(f"\nKubernetes writes in the quiet window, by (verb, resource, subresource): {kube_writes}")
    finally:
        # Delete while the operator and Keycloak still run, so the finalizers are released properly.
        for ns in [home, *spaces]:
            http.delete(f"/api/v1/namespaces/{ns}")
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and any(
            http.get(f"/api/v1/namespaces/{ns}").status_code == 200 for ns in [home, *spaces]
        ):
            time.sleep(2)
        operator.stop()
        kc.stop()
        kc.cleanup()


if __name__ == "__main__":
    main()
