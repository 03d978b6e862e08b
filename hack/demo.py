"""`make demo`: the local control plane, the CRDs, the operator, and a sample Keycloak that becomes Ready."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import localcluster
from localcluster import stages

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "demo"
PID_FILE = (
    Path(os.environ.get("KCOP_CACHE_DIR", Path.home() / ".cache" / "keycloak-operator")) / "demo-operator.pid"
)


def say(text: str) -> None:
    print(f"\n==> {text}", flush=True)


def kubectl(cluster: localcluster.Cluster, *args: str, input: str | None = None) -> str:
    result = subprocess.run(
        [str(cluster.bin_dir / "kubectl"), f"--kubeconfig={cluster.kubeconfig}", *args],
        input=input,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        sys.exit(f"kubectl {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


def stop_previous_operator() -> None:
    try:
        pid = int(PID_FILE.read_text())
        os.killpg(pid, signal.SIGTERM)
        time.sleep(1)
    except (FileNotFoundError, ValueError, ProcessLookupError, PermissionError):
        pass


def start_operator(cluster: localcluster.Cluster) -> tuple[int, Path]:
    log = PID_FILE.with_suffix(".log")
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "keycloak_operator.cli", "run", "--namespace", NAMESPACE],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    PID_FILE.write_text(str(proc.pid))
    return proc.pid, log


def wait_ready(cluster: localcluster.Cluster, name: str, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        kc = json.loads(kubectl(cluster, "get", "keycloak", name, "-n", NAMESPACE, "-o", "json"))
        status = kc.get("status") or {}
        line = (
            f"   phase={status.get('phase')} ready={status.get('readyReplicas', 0)}/{kc['spec']['replicas']}"
        )
        if line != last:
            print(line, flush=True)
            last = line
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", []))
        if ready and status.get("readyReplicas") == kc["spec"]["replicas"]:
            return dict(kc)
        time.sleep(1)
    sys.exit(f"Keycloak {name} did not become Ready in {timeout:.0f}s")


def upgrade(cluster: localcluster.Cluster, image: str, timeout: float = 300) -> None:
    """Changes the image and prints every blue-green state as the operator moves through it."""
    patch = json.dumps({"spec": {"image": image}})
    kubectl(cluster, "patch", "keycloak", "sample", "-n", NAMESPACE, "--type=merge", "-p", patch)
    deadline, last = time.monotonic() + timeout, ""
    started = time.monotonic()
    while time.monotonic() < deadline:
        kc = json.loads(kubectl(cluster, "get", "keycloak", "sample", "-n", NAMESPACE, "-o", "json"))
        status = kc.get("status") or {}
        bg = status.get("blueGreen") or {}
        line = f"{bg.get('state', '-'):<18} {bg.get('message', '')}"
        if line != last:
            print(f"   {time.monotonic() - started:6.1f}s  {line}", flush=True)
            last = line
        if (
            bg.get("greenImage") == image
            and bg.get("state") in ("Completed", "Failed")
            and (status.get("phase") in ("Running", "Degraded"))
        ):
            cache = status.get("cacheCluster", {}).get("name") or "(isolation off)"
            print(f"   versions: {status.get('versions')}\n   cache cluster: {cache}")
            return
        time.sleep(0.5)
    sys.exit(f"the upgrade to {image} did not finish in {timeout:.0f}s")


def main() -> None:
    say("Local control plane (the first run on a machine builds it from Go modules: 10-20 minutes)")
    cluster = localcluster.ensure_running()
    say("Installing the CRDs")
    kubectl(cluster, "apply", "--server-side", "--force-conflicts", "-f", str(ROOT / "deploy" / "crds"))
    kubectl(cluster, "wait", "--for=condition=Established", "--timeout=60s", "crd/keycloaks.kcop.dev")
    say("Starting the operator")
    stop_previous_operator()
    pid, log = start_operator(cluster)
    print(f"   pid {pid}, log {log}")
    say("Creating the sample Keycloak (examples/keycloak.yaml) in namespace demo")
    kubectl(
        cluster,
        "apply",
        "-f",
        "-",
        input=kubectl(cluster, "create", "namespace", NAMESPACE, "--dry-run=client", "-o", "yaml"),
    )
    # A rerun starts from scratch rather than "upgrading" the last run's 27.0.0 back to 26.0.0.
    kubectl(cluster, "delete", "keycloak", "sample", "-n", NAMESPACE, "--ignore-not-found", "--wait=true")
    kubectl(cluster, "apply", "-n", NAMESPACE, "-f", str(ROOT / "examples" / "keycloak.yaml"))
    say("Waiting until it is Ready")
    wait_ready(cluster, "sample")
    # Pods are simulated: give the new versions a 5 s "boot" so the upgrade states can be watched.
    for image in ("quay.io/keycloak/keycloak:26.0.1", "quay.io/keycloak/keycloak:27.0.0"):
        stages.apply_ready_delay(cluster.kubeconfig, image, 5)
    say("Patch upgrade 26.0.0 -> 26.0.1, blue-green: same cache cluster (sample-v26)")
    upgrade(cluster, "quay.io/keycloak/keycloak:26.0.1")
    say("Major upgrade 26 -> 27, blue-green: a new cache cluster (sample-v27), never mixed with 26")
    upgrade(cluster, "quay.io/keycloak/keycloak:27.0.0")
    say("What the operator created")
    print(kubectl(cluster, "get", "keycloak,deployment,service,secret,pods", "-n", NAMESPACE, "-o", "wide"))
    k = f"{cluster.bin_dir / 'kubectl'} --kubeconfig={cluster.kubeconfig}"
    say("Look around")
    print(f"   export KUBECONFIG={cluster.kubeconfig}")
    print(f"   {k} get keycloaks -n {NAMESPACE}")
    print(f"   {k} describe keycloak sample -n {NAMESPACE}")
    print(f"   {k} get endpointslices -n {NAMESPACE}")
    print(f"   The operator keeps running for namespace {NAMESPACE} (pid {pid}).")
    print("   `make cluster-down` stops the cluster. Promoted pods keep their green-era names:")
    print("   promotion adopted them instead of replacing them.")


if __name__ == "__main__":
    main()
