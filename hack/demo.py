"""`make demo`: the local cluster with its real node, the operator as a pod (the Helm chart, its image built
here), and a real 2-replica Keycloak on a real PostgreSQL: its URL and a token printed, then a blue-green
patch upgrade with sign-ins sent all along, attempted and failed printed as it goes.

Everything the demo makes stays up afterwards to look at; a rerun starts the Keycloak from scratch.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import localcluster
from keycloak_operator.kernel import names
from localcluster import app_images, real_keycloak, signins
from localcluster.helm import install_operator as install_operator_release

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE, OPERATOR_NAMESPACE, RELEASE = "demo", "kcop-system", "kcop"
FROM_VERSION, TO_VERSION = "26.7.0", "26.7.3"  # one minor line: Keycloak supports rolling between them
# Where earlier versions of this demo kept a local operator process: stopped so two operators never act.
OLD_PID_FILE = (
    Path(os.environ.get("KCOP_CACHE_DIR", Path.home() / ".cache" / "keycloak-operator")) / "demo-operator.pid"
)


def say(text: str) -> None:
    print(f"\n==> {text}", flush=True)


class Kube:
    def __init__(self, cluster: localcluster.Cluster) -> None:
        self.cluster = cluster

    def __call__(self, *args: str, input: str | None = None, check: bool = True) -> str:
        argv = [str(self.cluster.bin_dir / "kubectl"), f"--kubeconfig={self.cluster.kubeconfig}", *args]
        result = subprocess.run(argv, input=input, capture_output=True, text=True, check=False)
        if check and result.returncode != 0:
            sys.exit(f"kubectl {' '.join(args)} failed:\n{result.stderr}")
        return result.stdout

    def apply(self, obj: dict[str, Any]) -> None:
        self("apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(obj))

    def get(self, kind: str, name: str, namespace: str) -> dict[str, Any]:
        text = self("get", kind, name, "-n", namespace, "-o", "json", "--ignore-not-found")
        return dict(json.loads(text)) if text.strip() else {}


def wait(what: str, ready: Any, timeout: float, interval: float = 1.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(interval)
    sys.exit(f"timed out after {timeout:.0f}s waiting for {what}")


def stop_old_operator() -> None:
    with contextlib.suppress(FileNotFoundError, ValueError, ProcessLookupError, PermissionError):
        os.killpg(int(OLD_PID_FILE.read_text()), signal.SIGTERM)
    OLD_PID_FILE.unlink(missing_ok=True)


def install_operator(kube: Kube, image: str) -> None:
    existed = bool(kube.get("deployment", RELEASE, OPERATOR_NAMESPACE))
    # Only the demo's namespace: an operator left running after the demo must not act on anyone else's
    # Keycloaks (the tests' and benchmarks' on this cluster run operators of their own).
    watch = f"watchNamespaces={{{NAMESPACE}}}"
    install_operator_release(kube.cluster.kubeconfig, RELEASE, OPERATOR_NAMESPACE, image, watch)
    if existed:  # same image reference, maybe a new build: start it again
        kube("rollout", "restart", f"deployment/{RELEASE}", "-n", OPERATOR_NAMESPACE)
    kube("rollout", "status", f"deployment/{RELEASE}", "-n", OPERATOR_NAMESPACE, "--timeout=180s")


def keycloak_status(kube: Kube) -> dict[str, Any]:
    return dict(kube.get("keycloak", "sample", NAMESPACE).get("status") or {})


def serving(kube: Kube, version: str) -> bool:
    status = keycloak_status(kube)
    versions = status.get("versions") or {}
    return (
        status.get("phase") == "Running"
        and status.get("readyReplicas") == 2
        and str(versions.get("currentVersion", "")).startswith(f"{version}#")
        and not versions.get("nextVersion")
    )


def sample(image: str) -> dict[str, Any]:
    policy = {"upgradePolicy": {"strategy": "BlueGreen"}, "cacheIsolation": {"autoRevision": True}}
    return real_keycloak.keycloak("sample", NAMESPACE, image, **policy)


def replicate(kube: Kube) -> None:
    kube.apply(
        {
            "apiVersion": names.API_VERSION,
            "kind": names.REALM_KIND,
            "metadata": {"name": "demo", "namespace": NAMESPACE},
            "spec": {"server": {"keycloak": {"name": "sample"}}, "realmName": "demo"},
        }
    )
    kube.apply(
        {
            "apiVersion": names.API_VERSION,
            "kind": names.CLIENT_KIND,
            "metadata": {"name": "app", "namespace": NAMESPACE},
            "spec": {
                "realm": {"name": "demo"},
                "clientId": "app",
                "standardFlowEnabled": False,
                "serviceAccountsEnabled": True,
                "directAccessGrantsEnabled": True,
            },
        }
    )
    for kind, name in ((names.REALM_PLURAL, "demo"), (names.CLIENT_PLURAL, "app")):
        wait(
            f"{kind} {name} replicated",
            lambda k=kind, n=name: (kube.get(k, n, NAMESPACE).get("status") or {}).get("phase") == "Ready",
            timeout=120,
        )


def secret_data(kube: Kube, name: str) -> dict[str, str]:
    data = kube.get("secret", name, NAMESPACE).get("data") or {}
    return {k: base64.b64decode(v).decode() for k, v in data.items()}


def pods_by_ip(kube: Kube) -> dict[str, str]:
    pods = json.loads(
        kube("get", "pods", "-n", NAMESPACE, "-l", f"{names.LABEL_INSTANCE}=sample", "-o", "json")
    )
    return {
        p["status"][
            "podIP"
        ]: f"{p['metadata']['name']} ({p['spec']['containers'][0]['image'].rsplit(':', 1)[-1]})"
        for p in pods["items"]
        if p.get("status", {}).get("podIP")
    }


def upgrade_under_load(kube: Kube, image: str, login: signins.Login) -> None:
    load = signins.SignIns(login, max_seconds=900).start()
    started = time.monotonic()
    pods = pods_by_ip(kube)  # blue's pods are gone by the end: remember who was who
    try:
        wait("the first sign-ins", lambda: load.count() >= 10, timeout=60)
        kube.apply(sample(image))
        last: tuple[str, int] = ("", 0)
        printed = 0.0
        while not serving(kube, TO_VERSION):
            now = time.monotonic() - started
            if now > 600:
                sys.exit("the upgrade did not finish in 10 minutes")
            state = (keycloak_status(kube).get("blueGreen") or {}).get("state", "-")
            attempts, failed = load.count(), len(load.failures())
            pods.update(pods_by_ip(kube))
            # A line when the state or the failures change, else every 10 s.
            if (state, failed) != last or now - printed >= 10:
                line = f"{state:<16} sign-ins attempted {attempts:>5}, failed {failed}"
                print(f"   {now:6.1f}s  {line}", flush=True)
                last, printed = (state, failed), now
            time.sleep(1)
        after = load.count()
        wait("sign-ins after the upgrade", lambda: load.count() >= after + 20, timeout=60)
    finally:
        attempts = load.stop()
    failed = [a for a in attempts if not a.ok]
    print(
        f"   {time.monotonic() - started:6.1f}s  done: {len(attempts)} sign-ins attempted, "
        f"{len(failed)} failed"
    )
    pods.update(pods_by_ip(kube))
    by_pod = Counter(pods.get(a.served_by, a.served_by or "untraced") for a in attempts)
    print("   answered by (kube-proxy's choice, read from conntrack):")
    for pod, n in sorted(by_pod.items()):
        print(f"     {pod}: {n}")
    if failed:
        print(f"   first failures: {failed[:3]}")


def main() -> None:
    say("Local cluster: control plane, kwok's nodes and a real node (a first run builds them: ~15 minutes)")
    cluster = localcluster.ensure_running()
    kube = Kube(cluster)
    kube("apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "deploy" / "crds"))
    kube("wait", "--for=condition=Established", "--timeout=60s", "crd/keycloaks.kcop.dev")

    say(f"Images, built here with no engine: Keycloak {FROM_VERSION}, {TO_VERSION}, PostgreSQL, the operator")
    images = [app_images.keycloak(cluster, v) for v in (FROM_VERSION, TO_VERSION)]
    postgres, operator = app_images.postgres(cluster), app_images.operator(cluster)

    say(f"The operator, as a pod on the real node (Helm release {RELEASE} in {OPERATOR_NAMESPACE})")
    stop_old_operator()
    kube("create", "namespace", NAMESPACE, check=False)
    install_operator(kube, operator)

    say(f"PostgreSQL and a 2-replica Keycloak {FROM_VERSION} on the real node, namespace {NAMESPACE}")
    # A rerun starts from scratch: a new database too (the old one holds the last run's admin password).
    kube("delete", "keycloak", "sample", "-n", NAMESPACE, "--ignore-not-found", "--wait=true")
    kube("delete", "deployment", "postgres", "-n", NAMESPACE, "--ignore-not-found", "--wait=true")
    for obj in real_keycloak.postgres(NAMESPACE, postgres):
        kube.apply(obj)
    kube.apply(sample(images[0]))
    wait(
        f"Keycloak {FROM_VERSION} Ready (a real server starts in about a minute)",
        lambda: serving(kube, FROM_VERSION),
        600,
    )

    say("A realm and a client, replicated into it by the operator; a user through the admin API")
    replicate(kube)
    service = kube.get("service", names.public_service("sample"), NAMESPACE)
    url = f"http://{service['spec']['clusterIP']}:8080"
    client_secret = secret_data(kube, names.client_secret("app"))["clientSecret"]
    admin = secret_data(kube, names.admin_secret("sample"))
    real_keycloak.create_user(url, admin, "demo", "alice", "alice-password-1")
    token_url = f"{url}/realms/demo/protocol/openid-connect/token"
    form = {"grant_type": "client_credentials", "client_id": "app", "client_secret": client_secret}
    issued = wait("a token", lambda: real_keycloak.token(token_url, form), timeout=60)
    print(
        f"   Keycloak: {url}  (admin: {admin['username']}, password in Secret {names.admin_secret('sample')})"
    )
    print(f"   token from {token_url}:\n   {issued['access_token'][:72]}...")

    say(f"Blue-green patch upgrade {FROM_VERSION} -> {TO_VERSION}, with sign-ins running throughout")
    login = signins.Login(token_url, "app", client_secret, "alice", "alice-password-1")
    upgrade_under_load(kube, images[1], login)

    say("What the operator made")
    print(kube("get", "keycloak,deployment,service,pods", "-n", NAMESPACE, "-o", "wide"))
    say("Look around")
    print(f"   export KUBECONFIG={cluster.kubeconfig}")
    print(f"   {cluster.bin_dir / 'kubectl'} describe keycloak sample -n {NAMESPACE}")
    print(f"   curl -s {url}/realms/demo/.well-known/openid-configuration")
    print("   `make cluster-down` stops the cluster, its real node and everything on it.")


if __name__ == "__main__":
    main()
