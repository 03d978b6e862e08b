"""What the reconcile does with the preflight's answer (core/preflight.py, ADR 0024): hold the change while it
runs, say why a failed one holds it, record what it found, and what the planner plans from.

Pure; core/reconcile.py and its parts (decide_upgrade, decide_status) and core/deployment.py ask these
and add nothing of their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from keycloak_operator.core import optimized, preflight
from keycloak_operator.core.build_options import BuildOptions
from keycloak_operator.core.common import conditions
from keycloak_operator.core.images import parse_semver, release_of
from keycloak_operator.core.preflight import Answer
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import PreflightStatus

TAG_MISMATCH: Final = "ImageTagMismatch"
# Jobs are not watched: the shell looks again this soon. A pending preflight is what an upgrade waits for
# (most end in seconds on a fake node, a minute on a real one); a failed one only waits for a pull to recover.
POLL_PENDING_S: Final = 2.0
POLL_FAILED_S: Final = 15.0
_STATES: Final = {"pending": "Pending", "passed": "Passed", "failed": "Failed", "foreign": "Pending"}


@dataclass(frozen=True)
class Finding:
    """A Warning to post once, when the record first says it."""

    reason: str
    message: str


def problem(found: Answer, recorded: PreflightStatus | None) -> conditions.Wanted | None:
    """A failed preflight: Degraded, naming what failed (as first recorded: `record` keeps it, so the
    condition and its one event do not follow every back-off of a failing pull); every old pod keeps
    serving."""
    if found.state != "failed":
        return None
    message = recorded.message if recorded is not None and recorded.job == found.job else found.message
    return conditions.Wanted(
        conditions.DEGRADED,
        "True",
        preflight.REASON,
        f"{message}; the running pods keep serving. Fix spec.image or the configuration: the changed "
        "spec is proved again",
    )


def waiting_reason(found: Answer) -> str:
    """For status.upgradePlan.reason while the change is held by the preflight ("" when it is not)."""
    if found.state == "failed":
        return "the preflight of the new image failed; nothing changes (see the Degraded condition)"
    if found.pending:
        return f"waiting for the preflight of the new image before choosing a path ({found.message})"
    return ""


def record(
    previous: PreflightStatus | None, found: Answer, image: str, pods: BuildOptions | None = None
) -> PreflightStatus | None:
    """status.preflight: this change's answer while there is one; the last one otherwise (it stays the
    record of the version and digest the running image was proved with). `pods`: the build options of the
    pods the preflight proved, for the image's build (core/optimized.py)."""
    if found.state == "none":
        return previous
    message = found.message
    if previous is not None and (previous.job, previous.state, found.state) == (
        found.job,
        "Failed",
        "failed",
    ):
        message = previous.message  # a failing pull's reason and message change with every back-off
    mismatch = preflight.tag_disagrees(image, found.version) if found.state == "passed" else ""
    if mismatch and mismatch not in message:
        message = f"{message}; {mismatch}"
    build, built = optimized.image_build(pods or BuildOptions(), found)
    fields = optimized.recorded(build, built)
    if not build and previous is not None and (previous.job, previous.image) == (found.job, image):
        # Read back from the record (the Job is not read again): what the Job's report said stays.
        fields = {k: getattr(previous, k) for k in ("build", "build_options", "build_digest")}
    return PreflightStatus(
        job=found.job,
        image=image,
        state=_STATES[found.state],
        version=found.version,
        digest=found.digest,
        message=message,
        **fields,
    )


def findings(previous: PreflightStatus | None, now: PreflightStatus | None) -> list[Finding]:
    """The Warnings this pass's record adds: a tag that lies, once per change (a failure is said by the
    Degraded condition's own event)."""
    if now is None or now.state != "Passed":
        return []
    mismatch = preflight.tag_disagrees(now.image, now.version)
    if not mismatch:
        return []
    if previous is not None and (previous.job, previous.state) == (now.job, now.state):
        return []
    return [Finding(TAG_MISMATCH, mismatch)]


def needs_version(spec: KeycloakSpec) -> bool:
    """The pods need the image's version before they start and the tag names none: autoRevision derives
    the cache cluster from it (ADR 0003)."""
    isolation = spec.cache_isolation
    return bool(isolation.auto_revision and not isolation.cluster_name and release_of(spec.image) is None)


def from_record(job: str, record_: PreflightStatus | None, image: str) -> Answer | None:
    """This change's passed answer as status.preflight recorded it: the Job and its pod need not be read
    again (nor exist)."""
    if record_ is None or (record_.job, record_.image, record_.state) != (job, image, "Passed"):
        return None
    return Answer(job, "passed", True, _version(record_), _digest(record_), record_.message)


# Whoever may write the Keycloak's status could write anything there: only a digest or a version of the
# shapes the preflight itself records is believed (a release number, a sha256 digest).
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def _digest(record_: PreflightStatus) -> str:
    return record_.digest if _DIGEST.fullmatch(record_.digest) else ""


def _version(record_: PreflightStatus) -> str:
    return record_.version if parse_semver(record_.version) is not None else ""


def verified_version(record_: PreflightStatus | None, image: str) -> str:
    """The version the planner plans `image` from: the one read from the image by its passed preflight,
    "" when there is none (then the tag speaks, as before)."""
    if record_ is None or record_.image != image or record_.state != "Passed":
        return ""
    return _version(record_)


def pin(deployment: dict[str, Any], proof: PreflightStatus | None, image: str) -> dict[str, Any]:
    """`deployment` (rendered for `image`) running the bits its preflight proved: every container of
    `image` by the digest the node resolved, so every pod of one cache cluster runs the same bits however the
    tag moves, and the reference and version read recorded on it (rollout.image_of, image_version_of).
    Unchanged without a passed preflight of `image`."""
    if proof is None or proof.image != image or proof.state != "Passed":
        return deployment
    digest, version = _digest(proof), _version(proof)
    if not (digest or version):
        return deployment
    pinned = preflight.pinned(image, digest)
    annotations = deployment["metadata"].setdefault("annotations", {})
    annotations[names.ANNOTATION_IMAGE] = image
    if version:
        annotations[names.ANNOTATION_IMAGE_VERSION] = version
    pod = deployment["spec"]["template"]["spec"]
    for container in [*pod.get("initContainers", []), *pod.get("containers", [])]:
        if container.get("image") == image:
            container["image"] = pinned
    return deployment


def poll_after(found: Answer) -> float:
    """Seconds until the shell reads a preflight that holds the change again."""
    return POLL_FAILED_S if found.state == "failed" else POLL_PENDING_S
