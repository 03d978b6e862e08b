"""A minor upgrade of real Keycloak pods on the real node (26.5.6 to 26.7.3: the new version migrates the
schema when it starts, and the old one cannot run on it) under the default policy: the planner recreates,
no pod of the old version runs beside one of the new, the schema is migrated, and the downtime the operator
measures and reports (status, event) matches the one real sign-ins see (first to last failed)."""

from __future__ import annotations

import time

import pytest

import localcluster
from keycloak_operator.kernel import names
from localcluster import app_images, real_keycloak, realnode, signins
from localcluster.operator_process import OperatorProcess
from tests.integration.support import real_resources, sampler
from tests.integration.support.kubectl import Kubectl, wait_for

pytestmark = pytest.mark.integration

FROM_VERSION, TO_VERSION = "26.5.6", "26.7.3"
# Keycloak's own compatibility check first (a Job): for this pair it answers "not possible" (exit 3).
CHECKED = {"compatibilityCheck": True}


@pytest.fixture(scope="module")
def images(cluster: localcluster.Cluster, real_node: realnode.RealNode) -> dict[str, str]:
    return {
        "from": app_images.keycloak(cluster, FROM_VERSION),
        "to": app_images.keycloak(cluster, TO_VERSION),
        "postgres": app_images.postgres(cluster),
    }


def changesets(kubectl: Kubectl, namespace: str) -> int:
    """Rows of Liquibase's databasechangelog in Keycloak's database: each migration adds some."""
    (pod,) = kubectl.list("pods", namespace, selector="app=postgres")
    out = kubectl.run(
        "exec", "-n", namespace, pod["metadata"]["name"], "--",
        "psql", "-U", real_keycloak.DB_USER, "-d", real_keycloak.DB_NAME, "-tAc",
        "select count(*) from databasechangelog",
    ).stdout  # fmt: skip
    return int(out.strip())


def test_a_minor_upgrade_recreates_and_reports_the_downtime_sign_ins_saw(
    cluster: localcluster.Cluster,
    kubectl: Kubectl,
    images: dict[str, str],
    session_operator_stopped: None,
    real_operator: OperatorProcess,
    namespace: str,
) -> None:
    sso = real_resources.serve(
        kubectl,
        namespace,
        real_keycloak.keycloak("sso", namespace, images["from"], replicas=1, upgradePolicy=CHECKED),
        images["postgres"],
        FROM_VERSION,
    )
    before = changesets(kubectl, namespace)
    load = signins.SignIns(sso.login, max_seconds=900).start()
    watch = sampler.for_cluster(cluster, namespace)
    watch.interval = 0.5
    with watch:
        try:
            wait_for("sign-ins before the change", lambda: load.count() >= 20, timeout=60)
            kubectl.apply(
                real_keycloak.keycloak("sso", namespace, images["to"], replicas=1, upgradePolicy=CHECKED)
            )
            status = wait_for(
                f"{TO_VERSION} running after a recreate",
                lambda: real_resources.running(kubectl, namespace, TO_VERSION, replicas=1),
                timeout=600,
                interval=1,
            )
            settled = time.monotonic()
            wait_for(
                "sign-ins after the change",
                lambda: sum(a.at > settled and a.ok for a in list(load.attempts)) >= 20,
                timeout=90,
            )
        finally:
            attempts = load.stop()

    plan = status["upgradePlan"]
    assert plan["path"] == "Recreate" and plan["toImage"] == images["to"], plan
    assert plan["compatibilityCheck"].endswith("rolling update not possible (exit 3)"), plan
    assert "kc.sh update-compatibility check: rolling update not possible (exit 3)" in plan["reason"], plan

    # The old version never ran beside the new one: Recreate stops every old pod first.
    # Server pods only: the compatibility check's Job pod runs the new image beside blue, as it must.
    def servers(sample: sampler.Sample) -> set[str]:
        return {
            p.image
            for p in sample.pods.values()
            if p.labels.get(names.LABEL_COMPONENT) == names.COMPONENT_SERVER
        }

    mixed = [s.at for s in watch.samples if servers(s) >= {images["from"], images["to"]}]
    assert not mixed, f"old and new pods side by side at {mixed[:3]}"
    assert changesets(kubectl, namespace) > before  # 26.7.3 migrated the schema when it started

    # One window of failed sign-ins, then every one succeeds; the operator's figure covers it.
    failed = [a for a in attempts if not a.ok]
    assert failed, "a recreate with one replica must have a gap"
    first, last = failed[0].at, failed[-1].at
    assert all(a.ok for a in attempts if a.at > last)
    assert all(a.ok for a in attempts if a.at < first)
    seen = last - first
    reported = plan["downtimeSeconds"]
    assert seen - 2 <= reported <= seen + 10, (reported, seen)
    events = kubectl.list("events", namespace)
    measured = [e for e in events if e.get("reason") == "DowntimeMeasured"]
    assert len(measured) == 1 and f"{reported} s" in measured[0]["message"], measured
    print(f"recreate {FROM_VERSION} -> {TO_VERSION}: sign-ins failed {seen:.1f} s, operator: {reported} s")
