"""kwok Stages: how fake pods progress. Tests use them; the operator never knows they exist.

kwok runs with --enable-crds=Stage, so it reads every Stage from the cluster. `install_defaults` seeds
kwok's own default stages (pods become Running and Ready with an IP at once). The helpers below add
stages that select pods by container image (`.spec.containers.[].image`, any container) and carry
weight 1: when several stages match a pod, kwok picks only among those with a positive weight, so they
win over the defaults (weight 0) without the pod template having to carry anything.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from localcluster import kubectl, versions
from localcluster.stage_templates import BECOME_READY, CRASH_LOOP, STARTED_NOT_READY

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
# kwok learns about Stage changes through a watch; pods created right after an apply could still meet
# the old set, so the helpers wait this long before returning.
SETTLE_SECONDS = 1.0


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
    time.sleep(SETTLE_SECONDS)
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
    """Drops the test stages of `image`: its new pods follow the default stages again."""
    kubectl.run(kubeconfig, "delete", "stages.kwok.x-k8s.io", "-l", f"{LABEL_IMAGE}={_image_key(image)}")
    if settle:
        time.sleep(SETTLE_SECONDS)


def remove_all(kubeconfig: Path) -> None:
    kubectl.run(kubeconfig, "delete", "stages.kwok.x-k8s.io", "-l", f"{LABEL_TEST_STAGE}=true")
    time.sleep(SETTLE_SECONDS)
