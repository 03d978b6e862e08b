"""A minor upgrade of real Keycloak pods on the real node (26.5.6 to 26.7.3: the new version migrates the
schema when it starts, and the old one cannot run on it) under the default policy: the planner recreates,
no pod of the old version runs beside one of the new, the schema is migrated, and the downtime the operator
measures and reports (status, event) matches the one real sign-ins see (first to last failed).

Before that upgrade, on the same serving Keycloak and sign-ins (no second Keycloak start): the same minor
upgrade to an image the node cannot pull, then to 26.7.3 with a configuration it refuses (a feature it does
not know). Each time the preflight (ADR 0024) answers first: not one sign-in fails, the old pod never stops,
and the Keycloak says why (Degraded PreflightFailed, a Warning event).

After it, on the same Keycloak (its start is most of a real test's time, and the steps below only change its
image): tags that name no version with autoRevision, the optimized start, and `:latest` pulled from the
cluster's registry and run by the digest the node resolved."""

from __future__ import annotations

import time

import pytest

import localcluster
from keycloak_operator.kernel import names
from localcluster import app_images, real_keycloak, realnode, registry, signins
from localcluster.operator_process import OperatorProcess
from tests.integration.support import jgroups, real_resources, sampler
from tests.integration.support.kubectl import Kubectl, wait_for

pytestmark = pytest.mark.integration

FROM_VERSION, TO_VERSION = "26.5.6", "26.7.3"
# Keycloak's own compatibility check first (a Job): for this pair it answers "not possible" (exit 3).
CHECKED = {"compatibilityCheck": True}
# No node here can pull it (the registry is out of reach), as in issue 27's report.
UNPULLABLE = "quay.io/keycloak/keycloak:26.8.0"
REFUSED = {"features": {"enabled": ["no-such-feature"]}}  # 26.7.3 exits 2: "an unrecognized feature"
# The 26.7.3 image built here under two more names that carry no version: `:latest` the suite's (built with
# the pods' options, app_images.keycloak_tagged), the custom build the stock distribution (never built).
LATEST = "docker.io/library/keycloak:latest"
CUSTOM = "kcop.local/keycloak:custom-build"
BY_IMAGE = {"cacheIsolation": {"autoRevision": True}}
# The suite's 26.7.3 image in the cluster's registry under a tag that names no version.
PUSHED = ("keycloak", "latest")


@pytest.fixture(scope="module")
def images(
    cluster: localcluster.Cluster, real_node: realnode.RealNode, image_registry: registry.Registry
) -> dict[str, str]:
    return {
        "pushed": app_images.keycloak_pushed(image_registry, TO_VERSION, *PUSHED),
        "from": app_images.keycloak(cluster, FROM_VERSION),
        "to": app_images.keycloak(cluster, TO_VERSION),
        "latest": app_images.keycloak_tagged(cluster, TO_VERSION, LATEST),
        "custom": app_images.keycloak_stock(cluster, TO_VERSION, CUSTOM),
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


def old_pods(kubectl: Kubectl, namespace: str) -> dict[str, int]:
    """The serving pods (uid -> restarts), once each is Ready."""
    pods = kubectl.list("pods", namespace, selector=f"{names.LABEL_COMPONENT}={names.COMPONENT_SERVER}")
    ready = {
        p["metadata"]["uid"]: sum(c.get("restartCount", 0) for c in p["status"].get("containerStatuses", []))
        for p in pods
        if any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
    }
    assert len(ready) == len(pods) == 1, pods
    return ready


def refused(
    kubectl: Kubectl, namespace: str, image: str, extra: dict, says: str, serving: dict[str, int]
) -> None:
    """The change to `image` (with `extra` in the spec) is refused by its preflight, and nothing serving
    changed: the same pod, never restarted, Ready."""
    kubectl.apply(real_keycloak.keycloak("sso", namespace, image, replicas=1, upgradePolicy=CHECKED, **extra))

    def degraded() -> dict | None:
        status = (kubectl.get("keycloak", "sso", namespace) or {}).get("status") or {}
        for c in status.get("conditions", []):
            if c["type"] == "Degraded" and c["reason"] == "PreflightFailed" and says in c["message"]:
                return status
        return None

    status = wait_for(f"PreflightFailed saying {says!r}", degraded, timeout=240, interval=1)
    assert status["preflight"]["state"] == "Failed" and status["preflight"]["image"] == image, status
    events = [e for e in kubectl.list("events", namespace) if e.get("reason") == "PreflightFailed"]
    assert any(says in e["message"] for e in events), events
    assert old_pods(kubectl, namespace) == serving
    deployment = kubectl.get("deployment", names.deployment("sso"), namespace)
    assert deployment is not None
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] != image  # still the old one


def test_a_minor_upgrade_recreates_and_reports_the_downtime_sign_ins_saw(
    cluster: localcluster.Cluster,
    kubectl: Kubectl,
    images: dict[str, str],
    image_registry: registry.Registry,
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
            started = time.monotonic()
            serving = old_pods(kubectl, namespace)
            refused(kubectl, namespace, UNPULLABLE, {}, "cannot be pulled", serving)
            refused(kubectl, namespace, images["to"], REFUSED, "unrecognized feature", serving)
            preflights = time.monotonic() - started
            assert not [a for a in list(load.attempts) if not a.ok], "a sign-in failed while preflights ran"
            print(f"two refused preflights took {preflights:.0f} s")
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

    # Issue 27: autoRevision with tags that name no version, on the same Keycloak (no second one started).
    started = time.monotonic()
    cache_cluster_from_the_images_version(kubectl, namespace, images)
    print(f"tags without a version: {time.monotonic() - started:.0f} s")

    # Issue 28: the stock image is said to be unbuilt; the suite's, built with the pods' options, is found
    # and started --optimized with no user setting.
    optimized_start_found_and_used(kubectl, namespace, images)

    # Issue 27: `:latest` from a registry, pulled as the kubelet pulls it (Always), run by its digest.
    started = time.monotonic()
    latest_from_the_registry_runs_by_its_digest(kubectl, namespace, images["pushed"], image_registry)
    print(f"`:latest` from the registry: applied to Ready in {time.monotonic() - started:.0f} s")


def server_pods(kubectl: Kubectl, namespace: str) -> list[dict]:
    return kubectl.list("pods", namespace, selector=f"{names.LABEL_COMPONENT}={names.COMPONENT_SERVER}")


def optimized(status: dict) -> dict | None:
    return next((c for c in status.get("conditions", []) if c["type"] == "Optimized"), None)


def optimized_start_found_and_used(kubectl: Kubectl, namespace: str, images: dict[str, str]) -> None:
    """The custom-build image is the stock 26.7.3 distribution: its preflight's dry run said the pods' start
    builds first, with no option named (never built), so Optimized is False (ImageNotBuilt). The suite's
    26.7.3 image, which `kc.sh build` made with the operator's options (app_images.keycloak), passes its
    preflight with nothing to build: the pods start --optimized, Optimized is True, and the pod's log has no
    re-augmentation."""
    status = (kubectl.get("keycloak", "sso", namespace) or {}).get("status") or {}
    assert status["preflight"]["build"] == "NotBuilt", status["preflight"]
    condition = optimized(status)
    assert condition is not None and (condition["status"], condition["reason"]) == ("False", "ImageNotBuilt")
    applied = time.monotonic()
    kubectl.apply(
        real_keycloak.keycloak("sso", namespace, images["to"], replicas=1, upgradePolicy=CHECKED, **BY_IMAGE)
    )

    def started() -> dict | None:
        status = (kubectl.get("keycloak", "sso", namespace) or {}).get("status") or {}
        pods = server_pods(kubectl, namespace)
        ready = [
            p
            for p in pods
            if p["spec"]["containers"][0]["image"] == images["to"]
            and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
        ]
        settled = status.get("phase") == "Running" and not (status.get("versions") or {}).get("nextVersion")
        return {"status": status, "pods": ready} if settled and len(ready) == len(pods) == 1 else None

    found = wait_for("the optimized image's pod Ready", started, timeout=600, interval=1)
    print(f"optimized image: applied to Ready in {time.monotonic() - applied:.0f} s (preflight included)")
    assert found["status"]["preflight"]["build"] == "Read", found["status"]["preflight"]
    condition = optimized(found["status"])
    assert condition is not None and (condition["status"], condition["reason"]) == ("True", "ImageBuilt")
    (pod,) = found["pods"]
    assert pod["spec"]["containers"][0]["args"] == ["start", "--optimized"], pod["spec"]["containers"][0]
    log = kubectl.run("logs", "-n", namespace, pod["metadata"]["name"], "-c", "keycloak").stdout
    assert "Updating the server image" not in log and "Changes detected" not in log, log[-2000:]


def cache_cluster_from_the_images_version(kubectl: Kubectl, namespace: str, images: dict[str, str]) -> None:
    """`:latest` imported into the node: the kubelet pulls a `:latest` image whatever the node holds (the API
    server defaults its imagePullPolicy to Always) and no registry serves `docker.io/library/keycloak`
    here, so its preflight says it cannot be pulled and nothing serving moves, though the image is on the
    node under that name. A tag without a
    version that the node may use as it is (`custom-build`) passes: the version read from the image's files
    (26.7.3) names the cache cluster (`sso-v26`), where the tag alone would switch isolation off. The node
    gives no registry digest for an image it was given rather than pulled (imageID is `sha256:<image ID>`),
    so the pods run the reference as named; the same image pulled from the cluster's registry is pinned
    (latest_from_the_registry_runs_by_its_digest)."""
    serving = old_pods(kubectl, namespace)
    refused(kubectl, namespace, images["latest"], BY_IMAGE, "cannot be pulled", serving)
    kubectl.apply(
        real_keycloak.keycloak(
            "sso", namespace, images["custom"], replicas=1, upgradePolicy=CHECKED, **BY_IMAGE
        )
    )

    def moved() -> dict | None:
        status = (kubectl.get("keycloak", "sso", namespace) or {}).get("status") or {}
        pods = kubectl.list("pods", namespace, selector=f"{names.LABEL_COMPONENT}={names.COMPONENT_SERVER}")
        ready = [
            p
            for p in pods
            if p["spec"]["containers"][0]["image"] == images["custom"]
            and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
        ]
        settled = status.get("phase") == "Running" and not (status.get("versions") or {}).get("nextVersion")
        return {"status": status, "pods": ready} if settled and len(ready) == len(pods) == 1 else None

    found = wait_for("the custom-build pod Ready", moved, timeout=600, interval=1)
    preflight = found["status"]["preflight"]
    assert (preflight["state"], preflight["image"], preflight["version"]) == (
        "Passed",
        images["custom"],
        TO_VERSION,
    ), preflight
    assert not preflight.get("digest"), preflight  # the node resolved no registry digest
    (pod,) = found["pods"]
    assert pod["metadata"]["labels"][names.LABEL_CACHE_CLUSTER] == "sso-v26", pod["metadata"]["labels"]
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env", [])}
    assert env["KC_CACHE_EMBEDDED_CLUSTER_NAME"] == "sso-v26", env
    (container,) = pod["status"]["containerStatuses"]
    assert container["imageID"].startswith("sha256:"), container  # an image ID, no repo@digest
    deployment = kubectl.get("deployment", names.deployment("sso"), namespace)
    assert deployment is not None
    assert deployment["metadata"]["annotations"][names.ANNOTATION_IMAGE_VERSION] == TO_VERSION


def latest_from_the_registry_runs_by_its_digest(
    kubectl: Kubectl, namespace: str, image: str, served_by: registry.Registry
) -> None:
    """The suite's 26.7.3 image pushed to the cluster's registry as `keycloak:latest`, with autoRevision and
    the default pull policy (Always, for `:latest`): the preflight pulls it, reads 26.7.3 from its files and
    pins the digest the node resolved, which is the one the registry serves for the tag; the pods run
    `<name>@<that digest>` in the cache cluster of 26.7.3's revision (`sso-v26`), as the JGroups channel they
    log says, where the tag alone would have switched isolation off."""
    digest = served_by.digest(*PUSHED)
    assert digest.startswith("sha256:"), digest
    by_digest = f"{image.rsplit(':', 1)[0]}@{digest}"
    spec = real_keycloak.keycloak("sso", namespace, image, replicas=1, upgradePolicy=CHECKED, **BY_IMAGE)
    kubectl.apply(spec)  # no imagePullPolicy: the API server defaults it to Always for `:latest`

    def running() -> dict | None:
        status = (kubectl.get("keycloak", "sso", namespace) or {}).get("status") or {}
        pods = server_pods(kubectl, namespace)
        ready = [
            p
            for p in pods
            if p["spec"]["containers"][0]["image"] == by_digest
            and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))
        ]
        settled = status.get("phase") == "Running" and not (status.get("versions") or {}).get("nextVersion")
        return {"status": status, "pods": ready} if settled and len(ready) == len(pods) == 1 else None

    found = wait_for(f"a pod running {by_digest} Ready", running, timeout=600, interval=1)
    preflight = found["status"]["preflight"]
    assert (preflight["state"], preflight["image"], preflight["version"], preflight["digest"]) == (
        "Passed",
        image,
        TO_VERSION,
        digest,
    ), preflight
    (pod,) = found["pods"]
    (container,) = pod["status"]["containerStatuses"]
    assert container["imageID"] == by_digest, container  # what the node pulled, by the registry's digest
    assert pod["metadata"]["labels"][names.LABEL_CACHE_CLUSTER] == "sso-v26", pod["metadata"]["labels"]
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env", [])}
    assert env["KC_CACHE_EMBEDDED_CLUSTER_NAME"] == "sso-v26", env

    def channels() -> set[str] | None:
        log = kubectl.run("logs", "-n", namespace, pod["metadata"]["name"], "-c", "keycloak").stdout
        return {channel for channel, _, _ in jgroups.views_in(log)} or None

    assert wait_for("the pod's JGroups view", channels, timeout=60, interval=1) == {"sso-v26"}
