"""Cache isolation on the real control plane: names, rollouts that respect them, and selector repair."""

from __future__ import annotations

import pytest

from keycloak_operator.kernel import names
from localcluster import manifests, stages
from localcluster.operator_process import OperatorProcess
from tests.integration.support.kubectl import Kubectl, events, wait_for
from tests.integration.support.sampler import Pod, Sample, for_cluster

pytestmark = pytest.mark.integration

KC = f"keycloaks.{names.GROUP}"
IMAGE = "quay.io/keycloak/keycloak"
BOOT_SECONDS = 3  # kwok holds new pods not-Ready this long, like Keycloak's boot
# How long a pod may be Ready before its discovery Service's EndpointSlice lists it. The EndpointSlice
# controller publishes a pod only once its own watch and work queue have caught up with the pod's status, so
# one 100 ms sample can catch a pod Ready before its slice lists it (a clean-clone CI run did). 2 s leaves
# that lag room on a slow machine; a pod left out for longer, or never listed, or dropped while Ready, still
# fails.
PUBLISH_GRACE_SECONDS = 2.0


def status(kubectl: Kubectl, ns: str, name: str) -> dict:
    return dict((kubectl.get(KC, name, ns) or {}).get("status") or {})


def settled(kubectl: Kubectl, ns: str, name: str, image: str, replicas: int) -> dict | None:
    s = status(kubectl, ns, name)
    if s.get("phase") == "Running" and s.get("image") == image and s.get("readyReplicas") == replicas:
        return s
    return None


def discovery_of(name: str) -> str:
    """The membership Service the canonical track's pods query (ADR 0018)."""
    return names.membership_service(name, names.TRACKS[0])


def major(image: str) -> str:
    return image.rsplit(":", 1)[1].split(".")[0]


def serving(sample: Sample) -> list[Pod]:
    """The Ready server pods of a sample (not the preflight Job's pod, which runs the new image first)."""
    return [
        p
        for p in sample.pods.values()
        if p.ready and not p.terminating and p.labels.get(names.LABEL_COMPONENT) == names.COMPONENT_SERVER
    ]


def ready_spans(samples: list[Sample], name: str) -> dict[str, list[list[tuple[Sample, Pod]]]]:
    """By pod name: each unbroken run of samples in which that server pod of Keycloak `name` is Ready and not
    terminating (a pod that leaves Ready and comes back starts a new run). Server pods only: the preflight
    Job's pod is no cache cluster member."""
    spans: dict[str, list[list[tuple[Sample, Pod]]]] = {}
    before: set[str] = set()
    for s in samples:
        now = {p.name: p for p in serving(s) if p.labels.get(names.LABEL_INSTANCE) == name}
        for pod_name, pod in now.items():
            runs = spans.setdefault(pod_name, [])
            if pod_name in before:
                runs[-1].append((s, pod))
            else:
                runs.append([(s, pod)])
        before = set(now)
    return spans


def ready_past_grace(samples: list[Sample], name: str) -> bool:
    """Every pod Ready in the last sample has been seen Ready for longer than the grace period, so the
    check below covers it."""
    if not samples:
        return False
    last = samples[-1]
    current = [runs[-1] for runs in ready_spans(samples, name).values() if runs[-1][-1][0] is last]
    return bool(current) and all(run[-1][0].at - run[0][0].at > PUBLISH_GRACE_SECONDS for run in current)


def assert_ready_pods_published(samples: list[Sample], name: str) -> None:
    """Every Ready pod is listed by the discovery Service within the grace period of being seen Ready, and
    in every sample after that for as long as it stays Ready. A pod seen Ready from the first sample on gets
    the grace period from that sample: when it became Ready is not known."""
    discovery = discovery_of(name)
    for pod_name, runs in ready_spans(samples, name).items():
        for run in runs:
            since = run[0][0].at
            for s, pod in run:
                listed = s.all_addresses.get(discovery, frozenset())
                assert s.at - since <= PUBLISH_GRACE_SECONDS or pod.ip in listed, (
                    f"ready pod {pod_name} ({pod.ip}) missing from {discovery} at {s.at}, "
                    f"{s.at - since:.1f}s after it was seen Ready"
                )


def assert_no_public_gap(samples: list[Sample], name: str) -> None:
    public = names.public_service(name)
    empty = [s.at for s in samples if not s.ready_addresses.get(public)]
    assert not empty, f"{len(empty)} of {len(samples)} samples had no ready endpoint in {public}"


def test_patch_upgrade_keeps_the_cluster_and_rolls_without_downtime(
    cluster, kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    old, new = f"{IMAGE}:26.7.0", f"{IMAGE}:26.7.3"
    stages.apply_ready_delay(cluster.kubeconfig, new, BOOT_SECONDS)
    try:
        kubectl.apply(manifests.db_secret(namespace))
        kubectl.apply(
            manifests.keycloak(
                "patch", namespace, image=old, replicas=3, cacheIsolation={"autoRevision": True}
            )
        )
        before = wait_for("running 26.7.0", lambda: settled(kubectl, namespace, "patch", old, 3), timeout=90)
        assert before["cacheCluster"] == {
            "name": "patch-v26",
            "source": "autoRevision",
            "isolated": True,
            "reason": "autoRevision: isolated by name (Keycloak honours it from 26.7) and by discovery "
            "membership: each pod discovers only the pods of its own cache cluster",
        }
        discovery_uid = kubectl.get("service", discovery_of("patch"), namespace)["metadata"]["uid"]

        with for_cluster(cluster, namespace) as sampler:
            kubectl.apply(
                manifests.keycloak(
                    "patch", namespace, image=new, replicas=3, cacheIsolation={"autoRevision": True}
                )
            )
            after = wait_for(
                "running 26.7.3", lambda: settled(kubectl, namespace, "patch", new, 3), timeout=120
            )
            # Sample on until the last pods to become Ready have been Ready past the grace period: the check
            # below holds them to being listed.
            wait_for(
                f"every Ready pod seen Ready for over {PUBLISH_GRACE_SECONDS}s",
                lambda: ready_past_grace(list(sampler.samples), "patch"),
                timeout=PUBLISH_GRACE_SECONDS + 30,
            )
        assert after["cacheCluster"]["name"] == "patch-v26"
        dep = kubectl.get("deployment", names.deployment("patch"), namespace)
        assert dep["spec"]["strategy"]["type"] == "RollingUpdate"
        assert kubectl.get("service", discovery_of("patch"), namespace)["metadata"]["uid"] == discovery_uid

        samples = sampler.samples
        assert len(samples) > 20 and sampler.complete(), (
            len(samples),
            sampler.errors,
            sampler.last_error,
        )
        assert_no_public_gap(samples, "patch")
        # Both versions were really serving side by side at some point: this was a rolling update.
        assert any({p.image for p in serving(s)} == {old, new} for s in samples)
        # Every Ready pod is listed by its discovery Service (within the grace period) while it is Ready.
        assert_ready_pods_published(samples, "patch")
    finally:
        stages.remove(cluster.kubeconfig, new)


def test_major_upgrade_changes_the_cluster_and_never_mixes_majors(
    cluster, kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    old, new = f"{IMAGE}:26.3.0", f"{IMAGE}:27.0.0"
    stages.apply_ready_delay(cluster.kubeconfig, new, BOOT_SECONDS)
    try:
        kubectl.apply(manifests.db_secret(namespace))
        spec = {"cacheIsolation": {"autoRevision": True}}
        kubectl.apply(manifests.keycloak("major", namespace, image=old, replicas=3, **spec))
        wait_for("running 26", lambda: settled(kubectl, namespace, "major", old, 3), timeout=90)
        with for_cluster(cluster, namespace) as sampler:
            kubectl.apply(manifests.keycloak("major", namespace, image=new, replicas=3, **spec))
            after = wait_for("running 27", lambda: settled(kubectl, namespace, "major", new, 3), timeout=120)
        assert after["cacheCluster"]["name"] == "major-v27"
        svc = kubectl.get("service", discovery_of("major"), namespace)
        assert svc["spec"]["selector"][names.LABEL_CACHE_CLUSTER] == "major-v27"

        samples = sampler.samples
        assert len(samples) > 20 and sampler.complete(), (
            len(samples),
            sampler.errors,
            sampler.last_error,
        )
        for s in samples:
            listed = s.all_addresses.get(discovery_of("major"), frozenset())
            majors = {major(s.pods[ip].image) for ip in listed if ip in s.pods}
            assert len(majors) <= 1, f"discovery listed majors {majors} together at {s.at}"
            # Server pods only: the preflight Job's pod runs the new image first, beside the old ones.
            running = {
                major(p.image)
                for p in s.pods.values()
                if p.labels.get(names.LABEL_INSTANCE) == "major"
                and p.labels.get(names.LABEL_COMPONENT) == names.COMPONENT_SERVER
            }
            assert len(running) <= 1, f"pods of majors {running} ran side by side at {s.at}"
    finally:
        stages.remove(cluster.kubeconfig, new)


def test_non_semver_tag_disables_isolation_with_warning(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    kubectl.apply(manifests.db_secret(namespace))
    kubectl.apply(
        manifests.keycloak(
            "moving", namespace, image=f"{IMAGE}:latest", replicas=1, cacheIsolation={"autoRevision": True}
        )
    )
    s = wait_for("running", lambda: settled(kubectl, namespace, "moving", f"{IMAGE}:latest", 1), timeout=90)
    assert s["cacheCluster"]["isolated"] is False and s["cacheCluster"]["name"] == ""
    cond = next(c for c in s["conditions"] if c["type"] == "CacheIsolated")
    assert cond["status"] == "False" and "clusterName" in cond["message"]
    warnings = events(kubectl, namespace, name="moving", type_="Warning")
    assert any(e["reason"] == "CacheIsolationDisabled" for e in warnings)
    dep = kubectl.get("deployment", names.deployment("moving"), namespace)
    assert names.LABEL_CACHE_CLUSTER not in dep["spec"]["template"]["metadata"]["labels"]
    svc = kubectl.get("service", discovery_of("moving"), namespace)
    assert names.LABEL_CACHE_CLUSTER not in svc["spec"]["selector"]


def test_explicit_cluster_name_wins(kubectl: Kubectl, operator: OperatorProcess, namespace: str):
    kubectl.apply(manifests.db_secret(namespace))
    kubectl.apply(
        manifests.keycloak(
            "explicit",
            namespace,
            image=f"{IMAGE}:26.0.0",
            replicas=1,
            cacheIsolation={"clusterName": "blue-team", "autoRevision": True, "autoSuffix": True},
        )
    )
    s = wait_for("running", lambda: settled(kubectl, namespace, "explicit", f"{IMAGE}:26.0.0", 1), timeout=90)
    assert s["cacheCluster"]["name"] == "blue-team" and s["cacheCluster"]["source"] == "clusterName"
    dep = kubectl.get("deployment", names.deployment("explicit"), namespace)
    assert dep["spec"]["template"]["metadata"]["labels"][names.LABEL_CACHE_CLUSTER] == "blue-team"
    env = {e["name"]: e.get("value") for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["KC_SPI_CACHE_EMBEDDED__DEFAULT__CLUSTER_NAME"] == "blue-team"


def test_hand_edited_selector_is_restored_in_place(
    kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    kubectl.apply(manifests.db_secret(namespace))
    kubectl.apply(
        manifests.keycloak(
            "edited", namespace, image=f"{IMAGE}:26.0.0", replicas=1, cacheIsolation={"autoRevision": True}
        )
    )
    wait_for("running", lambda: settled(kubectl, namespace, "edited", f"{IMAGE}:26.0.0", 1), timeout=90)
    svc = kubectl.get("service", discovery_of("edited"), namespace)
    uid, selector = svc["metadata"]["uid"], svc["spec"]["selector"]
    kubectl.run(
        "patch",
        "service",
        discovery_of("edited"),
        "-n",
        namespace,
        "--type=merge",
        "-p",
        f'{{"spec":{{"selector":{{"{names.LABEL_CACHE_CLUSTER}":"someone-else","extra":"x"}}}}}}',
    )

    def restored() -> dict | None:
        now = kubectl.get("service", discovery_of("edited"), namespace)
        return now if now["spec"]["selector"] == selector else None

    back = wait_for("selector restored", restored, timeout=30)
    assert back["metadata"]["uid"] == uid
