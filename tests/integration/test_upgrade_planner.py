"""The upgrade planner on the real control plane (kwok's pods): a blue-green upgrade across a schema migration
with no database copy is refused while the running version serves on; allowed downtime makes it a recreate;
`keycloak-operator plan` says all this beforehand and changes nothing. Whether real Keycloak needs these
paths is tests/integration/test_real_keycloak.py's and the facts' (docs/adr/0016)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from keycloak_operator.kernel import names
from keycloak_operator.shell.cli_target import Exit
from localcluster import manifests, stages
from localcluster.operator_process import OperatorProcess
from tests.integration.support.kubectl import Kubectl, events, wait_for
from tests.integration.support.sampler import for_cluster

pytestmark = pytest.mark.integration

KC = f"keycloaks.{names.GROUP}"
IMAGE = "quay.io/keycloak/keycloak"
OLD, MINOR = f"{IMAGE}:26.5.6", f"{IMAGE}:26.7.3"


def status(kubectl: Kubectl, ns: str, name: str) -> dict:
    return dict((kubectl.get(KC, name, ns) or {}).get("status") or {})


def image_of(kubectl: Kubectl, ns: str, name: str) -> str:
    dep = kubectl.get("deployment", names.deployment(name), ns) or {}
    return str(
        dep.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])[0].get("image")
    )


def keycloak(ns: str, image: str, **policy: object) -> dict:
    return manifests.keycloak(
        "plan",
        ns,
        image=image,
        replicas=2,
        cacheIsolation={"autoRevision": True},
        upgradePolicy={"strategy": "BlueGreen", "drainDelay": "1s", **policy},
    )


def plan_command(kubeconfig: Path, ns: str, image: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "keycloak_operator.cli", "plan", "plan", "-n", ns, "--image", image],
        env={"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_blue_green_across_a_minor_is_refused_then_recreates_when_downtime_is_allowed(
    cluster, kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    kubectl.apply(manifests.db_secret(namespace))
    kubectl.apply(keycloak(namespace, OLD))
    wait_for("26.5.6 running", lambda: status(kubectl, namespace, "plan").get("phase") == "Running", 90)
    deployment_version = kubectl.get("deployment", names.deployment("plan"), namespace)["metadata"][
        "resourceVersion"
    ]

    # Asked first: refused, exit 1, and nothing changed.
    asked = plan_command(cluster.kubeconfig, namespace, MINOR)
    assert asked.returncode == 1, asked.stderr
    said = dict(line.split(None, 1) for line in asked.stdout.splitlines())
    assert said["path"] == "Refuse" and "minor change" in said["why"] and "allowDowntime" in said["why"]
    assert said["running"] == OLD and said["wanted"] == MINOR
    assert kubectl.get(KC, "plan", namespace)["spec"]["image"] == OLD
    assert (
        kubectl.get("deployment", names.deployment("plan"), namespace)["metadata"]["resourceVersion"]
        == deployment_version
    )

    with for_cluster(cluster, namespace) as sampler:
        kubectl.apply(keycloak(namespace, MINOR))

        def refused() -> dict | None:
            s = status(kubectl, namespace, "plan")
            degraded = next((c for c in s.get("conditions", []) if c["type"] == "Degraded"), {})
            return s if degraded.get("reason") == "UpgradeRefused" else None

        s = wait_for("UpgradeRefused", refused, timeout=60)
        assert s["upgradePlan"]["path"] == "Refuse" and s["upgradePlan"]["toImage"] == MINOR
        assert image_of(kubectl, namespace, "plan") == OLD
        assert kubectl.get("deployment", names.deployment("plan", green=True), namespace) is None
        assert (s.get("blueGreen") or {}).get("state", "Idle") == "Idle"
        assert events(kubectl, namespace, reason="UpgradeRefused")

        # Downtime allowed: the planner recreates, every old pod gone before a new one starts.
        stages.apply_ready_delay(cluster.kubeconfig, MINOR, 3)
        kubectl.apply(keycloak(namespace, MINOR, allowDowntime=True))

        def recreated() -> dict | None:
            s = status(kubectl, namespace, "plan")
            current = (s.get("versions") or {}).get("currentVersion", "")
            return s if s.get("phase") == "Running" and current.startswith("26.7.3#") else None

        done = wait_for("26.7.3 running after a recreate", recreated, timeout=120)
    stages.remove(cluster.kubeconfig, MINOR)
    assert done["upgradePlan"]["path"] == "Recreate" and done["upgradePlan"]["fromImage"] == OLD
    planned = events(kubectl, namespace, reason="UpgradePlanned")
    assert any("Recreate, because" in e["message"] for e in planned), planned
    # Never both versions Ready at once: the old pods stopped first (Keycloak's rule for a minor upgrade).
    # Server pods only: the preflight Job's pod runs the new image beside the old pods, as it must.
    for sample in sampler.samples:
        images = {
            p.image
            for p in sample.pods.values()
            if p.ready and not p.terminating and p.labels.get(names.LABEL_COMPONENT) == names.COMPONENT_SERVER
        }
        assert images != {OLD, MINOR}, f"26.5.6 and 26.7.3 both Ready at {sample.at}"
    assert any(not sample.ready_addresses.get(names.public_service("plan")) for sample in sampler.samples), (
        "a recreate has downtime: the samples must have seen it"
    )

    # Asked again for the next major line: the plan quotes the downtime the last Recreate measured.
    measured = wait_for(
        "the recreate's downtime measured",
        lambda: status(kubectl, namespace, "plan")["upgradePlan"].get("downtimeSeconds"),
        timeout=60,
    )
    asked = plan_command(cluster.kubeconfig, namespace, f"{IMAGE}:27.0.0")
    said = dict(line.split(None, 1) for line in asked.stdout.splitlines())
    assert said["path"] == "Recreate", asked.stdout
    assert f"no ready pod for {measured} s" in said["measured"], asked.stdout


def test_plan_command_names_roll_recreate_and_refuse_for_the_default_strategy(
    cluster, kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    kubectl.apply(manifests.db_secret(namespace))
    checked = {"compatibilityCheck": True}
    kubectl.apply(
        manifests.keycloak("plan", namespace, image=f"{IMAGE}:26.7.0", replicas=1, upgradePolicy=checked)
    )
    wait_for("26.7.0 running", lambda: status(kubectl, namespace, "plan").get("phase") == "Running", 90)
    for image, path, code in [
        (f"{IMAGE}:26.7.3", "Roll", 0),
        (f"{IMAGE}:27.0.0", "Recreate", 0),
        (f"{IMAGE}:26.5.6", "Refuse", 1),
        (f"{IMAGE}:26.7.0", "None", 0),
    ]:
        result = plan_command(cluster.kubeconfig, namespace, image)
        assert result.returncode == code, (image, result.stdout, result.stderr)
        said = dict(line.split(None, 1) for line in result.stdout.splitlines())
        assert said["path"] == path, image
        # Keycloak's own check is asked for: the plan says it has not run for this change (and runs none).
        assert ("not run yet" in said.get("check", "")) == (path != "None"), result.stdout
    assert not kubectl.list("jobs", namespace)
    missing = subprocess.run(
        [sys.executable, "-m", "keycloak_operator.cli", "plan", "nope", "-n", namespace, "--image", "x:1"],
        env={"KUBECONFIG": str(cluster.kubeconfig), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == Exit.NOT_FOUND, missing.stderr  # distinct from refusing (1)
    said = missing.stderr.strip().splitlines()
    assert len(said) == 1, said
    assert said[0].startswith(f"keycloak-operator plan: Keycloak {namespace}/nope not found")
