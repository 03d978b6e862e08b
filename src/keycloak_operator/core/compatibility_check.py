"""`kc.sh update-compatibility` as a Job: Keycloak's own answer to "can the new image roll beside the old?".

Since 26.2, `kc.sh update-compatibility metadata --file=F` run with the OLD image and configuration writes
what the running cluster is, and `kc.sh update-compatibility check --file=F` run with the NEW image and
configuration exits 0 when a rolling update is possible, 3 when it is not (4: the feature is disabled; 1, 2:
errors); only the exit code is a contract (docs/guides/server/update-compatibility.adoc). Verified here on
the real node: 26.7.0 -> 26.7.3 exits 0, 26.5.6 -> 26.7.3 exits 3.

One Job per pair of rendered versions (image and configuration): an init container `metadata` with the
running pods' container, then `check` with the wanted one, sharing an emptyDir. The exit code reaches the
operator through the Job's own conditions, with no pod read: `Complete` is 0, `Failed` by the pod failure
policy (exit 3 of `check`) is 3, any other failure is an error, for which the version rule decides.

Pure: the shell creates the Job and reads it back by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from keycloak_operator.core import jobs, rollout
from keycloak_operator.core.children import Owner
from keycloak_operator.core.images import release_of
from keycloak_operator.core.releases import CHECK_SINCE, line_of
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec

COMPONENT: Final = "compatibility-check"
INCOMPATIBLE: Final = 3
ERROR: Final = 1  # any failure that is not the check's "not possible": the version rule decides
DEADLINE_S: Final = 600
_DIR: Final = "/tmp/kcop-compatibility"  # an emptyDir mounted there, in the Job's pod only
_FILE: Final = f"{_DIR}/metadata.json"
_KC: Final = "/opt/keycloak/bin/kc.sh"


@dataclass(frozen=True)
class Answer:
    """What the shell found for this pass: the Job's name ("" when no check is wanted), whether it exists,
    and its exit code (None while it runs or before it exists)."""

    job: str = ""
    exists: bool = False
    exit: int | None = None
    # A Job under that name that this Keycloak did not make: its exit code is not Keycloak's answer for this
    # change (anyone who may create Jobs there could forge a "compatible"), so it is never read, and the
    # Keycloak waits, Degraded, naming it (core/child_ownership.py).
    foreign: bool = False

    @property
    def pending(self) -> bool:
        """A check is wanted and has not answered: nothing moves until it does."""
        return bool(self.job) and self.exit is None


def answer(job: str, obj: dict[str, Any] | None, owner: Owner) -> Answer:
    if obj is not None and not owner.owns(obj):
        return Answer(job, exists=True, exit=None, foreign=True)
    return Answer(job, obj is not None, exit_code(obj))


def wanted(spec: KeycloakSpec, running_image: str) -> bool:
    """The user asked for the check, the image changes, and both releases have the command (26.2+)."""
    if not spec.upgrade_policy.compatibility_check or running_image == spec.image:
        return False
    return available(running_image, spec.image)


def available(running_image: str, wanted_image: str) -> bool:
    """Both releases have `kc.sh update-compatibility` (26.2+)."""
    releases = [release_of(running_image), release_of(wanted_image)]
    return all(r is not None and line_of(r) >= CHECK_SINCE for r in releases)


def for_plan(spec: KeycloakSpec, running_image: str, found: Answer) -> str:
    """What `keycloak-operator plan` says of the check for this change ("" when it has nothing to say)."""
    if found.foreign:
        return (
            f"Job {found.job} exists and is not this Keycloak's: its answer is not read; the operator waits "
            "until it is deleted or renamed"
        )
    if found.job and found.exit is not None:
        return describe(found.job, found.exit)
    if found.job:
        started = "running" if found.exists else "not run yet for this change"
        return (
            f"Job {found.job}: {started}; the operator waits for its answer (about 80 s on the real node "
            "here) before choosing, and the answer can change the path below, which is the version rule's"
        )
    if running_image != spec.image and available(running_image, spec.image):
        return "off: upgradePolicy.compatibilityCheck: true lets Keycloak's own check decide (26.2+)"
    return ""


def job_name(keycloak: str, running_version: str, wanted_version: str) -> str:
    """Per pair of rendered versions (`<image version>#<spec hash>`): the same change asks once, a change of
    configuration asks again. A space separates them (it appears in neither)."""
    return f"{keycloak}-compat-{names.short_hash(f'{running_version} {wanted_version}')}"


def _container(name: str, source: dict[str, Any], args: list[str], kept_volumes: set[str]) -> dict[str, Any]:
    """The Keycloak container as the pods run it, made to run one kc.sh command: no probes, ports or hooks;
    its Secret and ConfigMap mounts (TLS, truststores) and the shared directory."""
    mounts = [m for m in source.get("volumeMounts") or [] if m.get("name") in kept_volumes]
    security = {**(source.get("securityContext") or {}), "readOnlyRootFilesystem": False}
    return {
        "name": name,
        "image": source["image"],
        "command": [_KC],
        "args": args,
        "env": list(source.get("env") or []),
        "volumeMounts": [*mounts, {"name": "check", "mountPath": _DIR}],
        "securityContext": security,
    }


def _keycloak_container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    return next(c for c in containers if c.get("name") == "keycloak")


def job(owner: Owner, running: dict[str, Any], desired: dict[str, Any], name: str) -> dict[str, Any]:
    """The Job for moving the pods of Deployment `running` to the pod template of Deployment `desired`."""
    pod = desired["spec"]["template"]["spec"]
    old_pod = running["spec"]["template"]["spec"]
    # Only read-only sources: the emptyDirs the pods' init containers fill (providers, a built lib/quarkus)
    # would be empty here, and an empty lib/quarkus breaks kc.sh.
    volumes = {
        v["name"]: v
        for v in [*old_pod.get("volumes", []), *pod.get("volumes", [])]
        if "secret" in v or "configMap" in v
    }
    metadata = _container(
        "metadata",
        _keycloak_container(running),
        ["update-compatibility", "metadata", f"--file={_FILE}"],
        set(volumes),
    )
    check = _container(
        "check",
        _keycloak_container(desired),
        ["update-compatibility", "check", f"--file={_FILE}"],
        set(volumes),
    )
    pod_spec: dict[str, Any] = {
        "initContainers": [metadata],
        "containers": [check],
        "volumes": [*volumes.values(), {"name": "check", "emptyDir": {}}],
        "enableServiceLinks": False,
        **{k: pod[k] for k in ("securityContext", "nodeSelector", "tolerations") if k in pod},
    }
    # Both pods' registry credentials: the old image runs `metadata`, the new one `check`.
    pull = [*old_pod.get("imagePullSecrets", []), *pod.get("imagePullSecrets", [])]
    if pull:
        pod_spec["imagePullSecrets"] = list({s["name"]: s for s in pull}.values())
    # The servers' node affinity, not their pod anti-affinity: a required "one server per node" would keep
    # the check off every node a server runs on, which may be all of them.
    node_affinity = (pod.get("affinity") or {}).get("nodeAffinity")
    if node_affinity:
        pod_spec["affinity"] = {"nodeAffinity": node_affinity}
    annotations = {
        names.ANNOTATION_VERSION: rollout.version_of(desired),
        f"{names.GROUP}/from-version": rollout.version_of(running),
    }
    # "Not possible" (exit 3 of `check`) fails the Job by this rule, so its Failed condition says
    # PodFailurePolicy; any other failure says BackoffLimitExceeded or DeadlineExceeded.
    failure_policy = {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": "check", "operator": "In", "values": [INCOMPATIBLE]},
            }
        ]
    }
    return jobs.one_try(
        owner, name, COMPONENT, pod_spec, DEADLINE_S, annotations, podFailurePolicy=failure_policy
    )


def exit_code(obj: dict[str, Any] | None) -> int | None:
    """The check's answer from the Job's conditions: 0, 3, ERROR; None while absent or running."""
    end = jobs.ended(obj) if obj is not None else None
    if end is None:
        return None
    if end.succeeded:
        return 0
    return INCOMPATIBLE if end.reason == "PodFailurePolicy" else ERROR


def describe(name: str, code: int | None) -> str:
    """For status.upgradePlan.compatibilityCheck."""
    if code is None:
        return f"Job {name}: running"
    meaning = {0: "rolling update possible (exit 0)", INCOMPATIBLE: "rolling update not possible (exit 3)"}
    return f"Job {name}: " + meaning.get(code, "failed (see its logs); the version rule decides")
