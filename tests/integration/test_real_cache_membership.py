"""Blue and green never share a JGroups view during an upgrade on Keycloak versions that ignore the cluster
name (before 26.7), read from Keycloak's own logs on the real node, with either JGroups stack.

Both pairs merged into one view when every pod queried both discovery Services (ADR 0018:
25.0.6 and 26.5.6 formed one view on channel `ISPN`, then green died of
the other version's cache events). Each upgrade here is a database-copy blue-green (BlueGreenCopy) with
`autoRevision` names, which Keycloak ignores before 26.7 (every channel is `ISPN`):
- the major pair on the `kubernetes` stack: each pod queries only its track's discovery Service, which on a
  copy lists its own track's pods only: membership alone keeps them apart;
- the minor pair on `jdbc-ping`: peers come from the database's `jgroups_ping` table, and green's is a copy
  of blue's, rows included; the copy Job deletes them, so separate databases keep the two `ISPN` apart
  (ADR 0021). Blue is kept at the end so that both run side by side
for longer than JGroups' merge interval, then the spec goes back and blue serves again; sign-ins run
throughout and none fails. The pair reaching 26.7 (26.5.6 to 26.7.3) is test_real_copy_upgrade.py's."""

from __future__ import annotations

import time
from typing import Any

import pytest

import localcluster
from localcluster import app_images, real_keycloak, realnode, signins
from localcluster.operator_process import OperatorProcess
from tests.integration.support import jgroups, real_resources
from tests.integration.support.kubectl import Kubectl, wait_for
from tests.integration.support.real_resources import KC

pytestmark = pytest.mark.integration


def keycloak(namespace: str, image: str, postgres: str, stack: str) -> dict[str, Any]:
    return real_keycloak.keycloak(
        "sso",
        namespace,
        image,
        replicas=1,
        cacheIsolation={"autoRevision": True, "stack": stack},
        upgradePolicy={"strategy": "BlueGreen", "autoTeardown": False, "databaseCopy": {"image": postgres}},
    )


def state(kubectl: Kubectl, namespace: str) -> str:
    status = (kubectl.get(KC, "sso", namespace) or {}).get("status") or {}
    return str((status.get("blueGreen") or {}).get("state", ""))


@pytest.mark.parametrize(
    ("old", "new", "stack"),
    [("26.4.7", "26.5.6", "jdbc-ping"), ("25.0.6", "26.5.6", "kubernetes")],
    ids=["minor-jdbc-ping", "major-kubernetes"],
)
def test_blue_and_green_never_share_a_view_before_26_7(
    cluster: localcluster.Cluster,
    real_node: realnode.RealNode,
    kubectl: Kubectl,
    session_operator_stopped: None,
    real_operator: OperatorProcess,
    namespace: str,
    old: str,
    new: str,
    stack: str,
) -> None:
    images = {v: app_images.keycloak(cluster, v) for v in (old, new)}
    postgres = app_images.postgres(cluster)
    sso = real_resources.serve(
        kubectl, namespace, keycloak(namespace, images[old], postgres, stack), postgres, old
    )
    load = signins.SignIns(sso.login, max_seconds=1200).start()
    try:
        with jgroups.ViewWatch(kubectl, namespace, "sso") as views:
            wait_for("sign-ins before the change", lambda: load.count() >= 20, timeout=60)
            kubectl.apply(keycloak(namespace, images[new], postgres, stack))
            together = real_resources.SideBySide(kubectl, namespace)
            wait_for(
                "green serving, blue kept",
                lambda: together.observe() and state(kubectl, namespace) == "Completed",
                timeout=900,
            )
            plan = ((kubectl.get(KC, "sso", namespace) or {}).get("status") or {}).get("upgradePlan") or {}
            assert plan.get("path") == "BlueGreenCopy", plan
            # Both colours up side by side, watched for longer than JGroups takes to merge two views.
            tracks = together.hold()
            views.collect()
            kubectl.apply(keycloak(namespace, images[old], postgres, stack))
            wait_for("back on blue", lambda: state(kubectl, namespace) == "Idle", timeout=300)
            back = time.monotonic()
            wait_for(
                "sign-ins on blue again",
                lambda: sum(a.at > back for a in list(load.attempts)) >= 10,
                timeout=90,
            )
    finally:
        attempts = load.stop()

    failed = [a for a in attempts if not a.ok]
    assert not failed, f"{len(failed)} of {len(attempts)} sign-ins failed; first: {failed[:2]}"
    jgroups.assert_apart(views.seen, tracks)
    channels = {v.channel for v in views.seen}
    print(f"{old} -> {new} ({stack}): {len(views.seen)} views on {channels}, none shared")
    print(f"{len(attempts)} sign-ins, 0 failed")
