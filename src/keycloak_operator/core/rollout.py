"""Reading a Deployment's rollout state, and choosing how the next change rolls out.

The rule (README, "Rollouts and cache clusters"): a change that keeps the cache cluster rolls pod by pod
with no downtime; a change that moves pods to another cache cluster, or changes the image while isolation is
off (the operator cannot tell whether two images are cache-compatible), uses Recreate, so no pod of the old
version is running when the first new one starts. One exception Keycloak itself documents: between patch
releases of one minor line from 26.6 on (rolling-updates:v2, on by default), old and new nodes may share a
cluster, so such a change rolls even with isolation off (checked on the real node: 26.7.0 to 26.7.3 under
sign-in load).
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import names
from keycloak_operator.core.images import ImageParseError, parse_image, parse_semver

# The first minor line on which Keycloak supports rolling updates between its patch releases by default.
PATCH_ROLLING_SINCE = (26, 6)


def _template(deployment: dict[str, Any]) -> dict[str, Any]:
    return dict(deployment.get("spec", {}).get("template", {}))


def image_of(deployment: dict[str, Any]) -> str:
    containers = _template(deployment).get("spec", {}).get("containers", [])
    return str(containers[0].get("image", "")) if containers else ""


def cache_cluster_of(deployment: dict[str, Any]) -> str | None:
    labels = _template(deployment).get("metadata", {}).get("labels", {}) or {}
    value = labels.get(names.LABEL_CACHE_CLUSTER)
    return str(value) if value else None


def track_of(deployment: dict[str, Any]) -> str | None:
    labels = deployment.get("metadata", {}).get("labels", {}) or {}
    value = labels.get(names.LABEL_TRACK)
    return str(value) if value else None


def version_of(deployment: dict[str, Any]) -> str:
    """The version string the Deployment was rendered for."""
    annotations = deployment.get("metadata", {}).get("annotations", {}) or {}
    return str(annotations.get(names.ANNOTATION_VERSION, ""))


def progress_deadline_exceeded(deployment: dict[str, Any]) -> bool:
    conditions = deployment.get("status", {}).get("conditions", []) or []
    return any(
        c.get("type") == "Progressing"
        and c.get("status") == "False"
        and c.get("reason") == "ProgressDeadlineExceeded"
        for c in conditions
    )


def ready_replicas(deployment: dict[str, Any] | None) -> int:
    if deployment is None:
        return 0
    return int(deployment.get("status", {}).get("readyReplicas", 0) or 0)


def rollout_complete(deployment: dict[str, Any] | None) -> bool:
    """True when the controller has seen the latest spec and every replica runs it and is available."""
    if deployment is None:
        return False
    meta, spec, status = (
        deployment.get("metadata", {}),
        deployment.get("spec", {}),
        deployment.get("status", {}),
    )
    want = int(spec.get("replicas", 1))
    return (
        int(status.get("observedGeneration", 0)) >= int(meta.get("generation", 0))
        and int(status.get("updatedReplicas", 0) or 0) == want
        and int(status.get("replicas", 0) or 0) == want
        and int(status.get("availableReplicas", 0) or 0) == want
        and int(status.get("readyReplicas", 0) or 0) == want
    )


def use_recreate(observed: dict[str, Any] | None, image: str, cache_cluster: str | None) -> bool:
    if observed is None:
        return False
    strategy = observed.get("spec", {}).get("strategy", {}).get("type")
    if strategy == "Recreate" and not rollout_complete(observed):
        return True  # never switch strategy in the middle of a Recreate rollout
    if cache_cluster_of(observed) != cache_cluster:
        return True
    old = image_of(observed)
    return cache_cluster is None and old != image and not patch_rolling_supported(old, image)


def patch_rolling_supported(old_image: str, new_image: str) -> bool:
    """Both images are releases of one Keycloak minor line on which Keycloak supports patch rolling: same
    repository, SemVer tags (no pre-release), same major.minor, that line 26.6 or later."""
    old, new = parse_image(old_image), parse_image(new_image)
    if isinstance(old, ImageParseError) or isinstance(new, ImageParseError) or old.name != new.name:
        return False
    a, b = parse_semver(old.tag), parse_semver(new.tag)
    if a is None or b is None or a.prerelease or b.prerelease:
        return False
    return (a.major, a.minor) == (b.major, b.minor) and (a.major, a.minor) >= PATCH_ROLLING_SINCE
