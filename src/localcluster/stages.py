"""kwok Stages: how fake pods progress. Tests use them; the operator never knows they exist.

kwok runs with --enable-crds=Stage, so it reads every Stage from the cluster. `install_defaults` seeds
kwok's own default stages (pods become Running and Ready with an IP at once). The helpers below add
stages that select pods by container image (`.spec.containers.[].image`, any container) and carry
weight 1: when several stages match a pod, kwok picks only among those with a positive weight, so they
win over the defaults (weight 0) without the pod template having to carry anything. They leave Jobs' pods
alone: those complete by kwok's default stage.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from pathlib import Path
from typing import Any

from localcluster import kubectl, versions
from localcluster.stage_templates import BECOME_READY, CRASH_LOOP, MARKER, STARTED_NOT_READY

LABEL_TEST_STAGE = "localcluster.kcop.dev/test-stage"
LABEL_IMAGE = "localcluster.kcop.dev/image-sha"
ANNOTATION_IMAGE = "localcluster.kcop.dev/image"
CRD_NAME = "stages.kwok.x-k8s.io"
DEFAULT_STAGE_FILES = (
    "node-initialize.yaml",
    "node-heartbeat-with-lease.yaml",
    "pod-ready.yaml",
    "pod-complete.yaml",
    "pod-delete.yaml",
)
# kwok learns about Stage changes through a watch, so pods created right after an apply could still meet the
# old set. The helpers return only once a canary pod running the image shows the new set in force; a fixed
# pause was not enough on a loaded machine (a broken image's pods came up Ready by the default stages).
CANARY_NAMESPACE = "default"
CANARY_DEADLINE_SECONDS = 60.0
CANARY_POLL_SECONDS = 0.2


def install_defaults(kubeconfig: Path) -> None:
    """The Stage CRD and kwok's default node and pod stages, as exported from its module at build time."""
    manifests = versions.kwok_manifest_dir()
    kubectl.run(kubeconfig, "apply", "--server-side", "-f", str(manifests / "kwok.x-k8s.io_stages.yaml"))
    kubectl.run(kubeconfig, "wait", "--for=condition=Established", "--timeout=60s", f"crd/{CRD_NAME}")
    for name in DEFAULT_STAGE_FILES:
        kubectl.run(kubeconfig, "apply", "--server-side", "-f", str(manifests / name))


def _image_key(image: str) -> str:
    return hashlib.sha256(image.encode()).hexdigest()[:12]


def _expr(key: str, operator: str, values: list[str] | None = None) -> dict[str, Any]:
    jq: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        jq["values"] = values
    return {"jq": jq}


def _stage(
    image: str, suffix: str, exprs: list[dict[str, Any]], template: str, **extra: Any
) -> dict[str, Any]:
    key = _image_key(image)
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {
            "name": f"kcop-test-{key}-{suffix}",
            "labels": {LABEL_TEST_STAGE: "true", LABEL_IMAGE: key},
            "annotations": {ANNOTATION_IMAGE: image},
        },
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "weight": 1,
            "selector": {
                "matchExpressions": [
                    _expr(".metadata.deletionTimestamp", "DoesNotExist"),
                    # Server pods only: a Job's pod (the operator's preflight of this image) runs to
                    # completion by kwok's default stage, as a one-shot command does.
                    _expr('.metadata.labels["batch.kubernetes.io/job-name"]', "DoesNotExist"),
                    _expr(".spec.containers.[].image", "In", [image]),
                    *exprs,
                ]
            },
            "next": {"statusTemplate": template},
            **extra,
        },
    }


def _starting(image: str, template: str) -> dict[str, Any]:
    """Matches a pod kwok has not started yet (no IP) and starts it not Ready."""
    return _stage(image, "start", [_expr(".status.podIP", "DoesNotExist")], template)


def _apply(kubeconfig: Path, image: str, stages: list[dict[str, Any]]) -> list[str]:
    # One behaviour per image: two matching stages of equal weight would be a coin toss.
    remove(kubeconfig, image, settle=False)
    manifest = {"apiVersion": "v1", "kind": "List", "items": stages}
    kubectl.run(kubeconfig, "apply", "-f", "-", input=json.dumps(manifest))
    _await_stages(kubeconfig, image, test_stage=True)
    return [s["metadata"]["name"] for s in stages]


def apply_ready_delay(kubeconfig: Path, image: str, seconds: float) -> list[str]:
    """Pods running `image` start at once with an IP but become Ready only `seconds` after their start.

    The delay is measured from the pod's status.startTime, not from when kwok last saw the pod, so other
    updates to the pod (labels, annotations) do not restart the clock.
    """
    millis = int(seconds * 1000)
    ready_at = f".status.startTime | fromdateiso8601 + {seconds} | todateiso8601"
    become_ready = _stage(
        image,
        "ready",
        [
            _expr(".status.podIP", "Exists"),
            _expr('.status.conditions.[] | select( .type == "Ready" ) | .status', "NotIn", ["True"]),
            _expr(".status.containerStatuses.[].state.running", "Exists"),
        ],
        BECOME_READY,
        delay={"durationMilliseconds": millis, "durationFrom": {"jq": {"expression": ready_at}}},
    )
    return _apply(kubeconfig, image, [_starting(image, STARTED_NOT_READY), become_ready])


def apply_never_ready(kubeconfig: Path, image: str) -> list[str]:
    """Pods running `image` get an IP but crash-loop: Running, never Ready (a broken image)."""
    return _apply(kubeconfig, image, [_starting(image, CRASH_LOOP)])


def remove(kubeconfig: Path, image: str, *, settle: bool = True) -> None:
    """Drops the test stages of `image`: its new pods follow the default stages again (once this returns,
    unless `settle` is False)."""
    kubectl.run(kubeconfig, "delete", "stages.kwok.x-k8s.io", "-l", f"{LABEL_IMAGE}={_image_key(image)}")
    if settle:
        _await_stages(kubeconfig, image, test_stage=False)


def remove_all(kubeconfig: Path) -> None:
    listed = kubectl.run(
        kubeconfig, "get", "stages.kwok.x-k8s.io", "-l", f"{LABEL_TEST_STAGE}=true", "-o", "json"
    )
    images = {
        i["metadata"].get("annotations", {}).get(ANNOTATION_IMAGE) for i in json.loads(listed.stdout)["items"]
    }
    kubectl.run(kubeconfig, "delete", "stages.kwok.x-k8s.io", "-l", f"{LABEL_TEST_STAGE}=true")
    for image in sorted(i for i in images if i):
        _await_stages(kubeconfig, image, test_stage=False)


def canary_verdict(pod: dict[str, Any]) -> bool | None:
    """Which stage started this pod: True a test stage, False kwok's default, None not started yet."""
    status = pod.get("status") or {}
    if not status.get("podIP"):
        return None
    return status.get("message") == MARKER


def _await_stages(kubeconfig: Path, image: str, *, test_stage: bool) -> None:
    """Starts canary pods running `image` until one is started by the wanted kind of stage.

    A canary started by the stale set is discarded and a new one made: a pod keeps the stage it was started
    by. Fails after CANARY_DEADLINE_SECONDS, naming the image."""
    deadline = time.monotonic() + CANARY_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        name = f"kcop-stage-canary-{secrets.token_hex(4)}"
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": CANARY_NAMESPACE, "labels": {LABEL_TEST_STAGE: "canary"}},
            "spec": {"containers": [{"name": "canary", "image": image}], "terminationGracePeriodSeconds": 0},
        }
        kubectl.run(kubeconfig, "create", "-f", "-", input=json.dumps(pod))
        try:
            verdict = None
            while verdict is None and time.monotonic() < deadline:
                got = kubectl.run(kubeconfig, "get", "pod", name, "-n", CANARY_NAMESPACE, "-o", "json")
                verdict = canary_verdict(json.loads(got.stdout))
                if verdict is None:
                    time.sleep(CANARY_POLL_SECONDS)
            if verdict == test_stage:
                return
        finally:
            kubectl.run(
                kubeconfig,
                "delete",
                "pod",
                name,
                "-n",
                CANARY_NAMESPACE,
                "--grace-period=0",
                "--force",
                "--wait=false",
                check=False,
            )
    wanted = "its test stages" if test_stage else "kwok's default stages"
    raise TimeoutError(
        f"kwok did not start a pod running {image} with {wanted} within {CANARY_DEADLINE_SECONDS:.0f}s"
    )
