"""What users watch the operator through, on the real control plane: Prometheus metrics moving through a
blue-green upgrade, JSON log lines, and `keycloak-operator status` reading a real Keycloak."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from keycloak_operator.core import fleet
from keycloak_operator.shell.cli_target import Exit
from localcluster import manifests, stages
from localcluster.operator_process import OperatorProcess
from tests.integration.support.kubectl import Kubectl, wait_for
from tests.integration.test_blue_green import EXTERNAL, IMAGE, bg_state, running, upgrade

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(metrics: dict, name: str, **labels: str) -> float:
    return metrics.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_logs_and_status_through_an_upgrade(
    cluster, kubectl: Kubectl, session_operator_stopped: None, namespace: str, tmp_path: Path
) -> None:
    old, new = f"{IMAGE}:26.7.0", f"{IMAGE}:26.7.3"
    stages.apply_ready_delay(cluster.kubeconfig, new, 3)
    port = free_port()
    operator = OperatorProcess(cluster.kubeconfig, tmp_path)
    operator.start("--all-namespaces", "--metrics-port", str(port), "--log-format", "json")
    try:
        kubectl.apply(manifests.db_secret(namespace))
        upgrade(kubectl, namespace, "obs", old, EXTERNAL)
        wait_for("blue running", lambda: running(kubectl, namespace, "obs", old), timeout=90)
        before = scrape(port)
        assert value(before, "kcop_reconciles_total", kind="Keycloak", result="ok") > 0
        assert value(before, "kcop_upgrades_total", event="completed") == 0

        upgrade(kubectl, namespace, "obs", new, EXTERNAL)
        wait_for(
            "upgrade completed",
            lambda: (
                bg_state(kubectl, namespace, "obs") == "Completed" and running(kubectl, namespace, "obs", new)
            ),
            timeout=180,
        )
        after = scrape(port)
        assert value(after, "kcop_upgrades_total", event="started") == 1
        assert value(after, "kcop_upgrades_total", event="completed") == 1
        assert value(after, "kcop_upgrades_total", event="failed") == 0
        # green takes 3 s to become Ready: the time in WaitingForGreen is observed, and is not zero
        waited = value(after, "kcop_upgrade_state_duration_seconds_sum", state="WaitingForGreen")
        assert value(after, "kcop_upgrade_state_duration_seconds_count", state="WaitingForGreen") == 1
        assert waited >= 1
        for state in (
            "BackingUp",
            "ProvisioningGreen",
            "CuttingOver",
            "Draining",
            "TearingDownBlue",
            "Promoting",
        ):
            assert value(after, "kcop_upgrade_state_duration_seconds_count", state=state) == 1, state
        assert value(after, "kcop_reconcile_duration_seconds_count", kind="Keycloak") > value(
            before, "kcop_reconcile_duration_seconds_count", kind="Keycloak"
        )

        # The fleet gauges, counted at scrape time from what the operator saw, agree with the API server
        # (every Keycloak of the cluster counts: earlier tests' may still be there).
        def fleet_agrees() -> bool:
            stored = [k.get("status") or {} for k in kubectl.list("keycloaks.kcop.dev", None)]
            not_ready = sum(
                1
                for s in stored
                if not any(c["type"] == "Ready" and c["status"] == "True" for c in s.get("conditions", []))
            )
            m = scrape(port)
            planned = sum(value(m, "kcop_upgrade_plans", path=p) for p in fleet.PLAN_PATHS)
            return (
                value(m, "kcop_leading") == 1
                and value(m, "kcop_keycloaks_not_ready") == not_ready
                and value(m, "kcop_keycloaks", phase="Running") >= 1
                and planned >= 1
            )

        wait_for("the fleet gauges agree with the stored statuses", fleet_agrees, timeout=30)

        # JSON logs: every line the operator wrote is one JSON object with a message.
        lines = [line for line in operator.log_text().splitlines() if line.strip()]
        assert lines
        for line in lines:
            assert "message" in json.loads(line), line

        # The status command, against the same Keycloak.
        env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "COLUMNS": "200"}
        out = subprocess.run(
            [sys.executable, "-m", "keycloak_operator.cli", "status", "obs", "-n", namespace],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        done = kubectl.get("keycloaks.kcop.dev", "obs", namespace)["status"]
        for needle in (
            f"{namespace}/obs",
            done["versions"]["currentVersion"],
            done["versions"]["lastVersion"],
            "Completed",
            "obs-keycloak",
            "3/3",
            "BlueGreenCompleted",
        ):
            assert needle in out, (needle, out)
        missing = subprocess.run(
            [sys.executable, "-m", "keycloak_operator.cli", "status", "nope", "-n", namespace],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert missing.returncode == Exit.NOT_FOUND and "not found" in missing.stderr  # not 1: a refusal
    finally:
        operator.stop()
        stages.remove(cluster.kubeconfig, new)
