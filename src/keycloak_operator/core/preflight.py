"""The preflight: a Job that proves a new image before anything serving is touched (ADR 0024).

One Job per image change, named from the running Deployment's rendered version and the wanted one (image and
configuration: `<image version>#<spec hash>`), owned by the Keycloak, so an operator restart finds the same
Job again and a change of image or configuration asks again. Its pod is the wanted Keycloak container as the
pods would run it (environment, Secret and ConfigMap volumes, security context, scheduling, service account
and pull secrets) running one bash script (core/preflight_script.py) that reads the version from the image's
files, has Keycloak validate the configuration, and writes a report to the termination message.

The answer is read from the Job and its pod (the only place the kubelet puts the digest it resolved,
`containerStatuses[].imageID`, a pull that fails, and the termination message): `answer` below, pure.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from keycloak_operator.core import jobs, preflight_script, rollout
from keycloak_operator.core.children import Owner
from keycloak_operator.core.images import ImageParseError, SemVer, parse_image, parse_semver
from keycloak_operator.core.preflight_script import Change, parse_report
from keycloak_operator.kernel import names

COMPONENT: Final = "preflight"
CONTAINER: Final = "preflight"
# The label the Job controller puts on its pods (Kubernetes 1.27+).
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
REASON: Final = "PreflightFailed"
DEADLINE_S: Final = 600
# A pull that fails for this long is a failure: the kubelet's back-off has retried by then (ErrImagePull,
# then ImagePullBackOff after 10 s, 20 s), and a transient registry hiccup has had its chance. The Job goes on
# pulling until its deadline; should it succeed later, the change proceeds.
PULL_GRACE_S: Final = 30
_PULL_FAILURES: Final = frozenset({"ErrImagePull", "ImagePullBackOff", "RegistryUnavailable"})
_AT_ONCE: Final = frozenset({"InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError"})
_MESSAGE_MAX: Final = 1500

State = Literal["none", "pending", "passed", "failed", "foreign"]


@dataclass(frozen=True)
class Answer:
    """The preflight for the change at hand. `state`: none (no image change), pending (not answered yet:
    nothing moves), passed, failed (nothing moves; Degraded), foreign (a Job under its name this Keycloak did
    not make: never read)."""

    job: str = ""
    state: State = "none"
    exists: bool = False
    version: str = ""  # read from the image's files
    digest: str = ""  # sha256:..., the manifest digest the node resolved; "" when it gave none
    message: str = ""  # what failed, or what is awaited
    # Whether the pods' start builds first, as Keycloak's dry run of it answered (None: not asked), and the
    # image's values of the build options it would change (core/preflight_script.py).
    rebuild: bool | None = None
    changed: tuple[Change, ...] = ()

    @property
    def pending(self) -> bool:
        return self.state in ("pending", "foreign")

    @property
    def holds(self) -> bool:
        """Nothing serving moves: not answered, answered no, or unreadable."""
        return self.state in ("pending", "failed", "foreign")


def job_name(keycloak: str, running_version: str, wanted_version: str) -> str:
    """Per pair of rendered versions (`<image version>#<spec hash>`; the spec hash covers the image
    reference): the same change asks once, a new image or configuration asks again."""
    return f"{keycloak}-preflight-{names.short_hash(f'{running_version} {wanted_version}')}"


def wanted(running_image: str, wanted_image: str, needs_version: bool = False) -> bool:
    """Every image change of serving pods. The first creation has nothing serving to protect (a pod that
    cannot start fails where the user looks), so it waits for one only when the pods need the image's
    version before they start and its tag has none (`needs_version`: autoRevision; ADR 0024)."""
    if not running_image:
        return needs_version
    return running_image != wanted_image


def job(owner: Owner, desired: dict[str, Any], name: str, running_version: str) -> dict[str, Any]:
    """The Job proving the pod template of Deployment `desired`."""
    pod = desired["spec"]["template"]["spec"]
    source = next(c for c in pod["containers"] if c.get("name") == "keycloak")
    # Only read-only sources: the emptyDirs the pods' init containers fill (providers, a built lib/quarkus)
    # would be empty here, and an empty lib/quarkus breaks kc.sh.
    volumes = [v for v in pod.get("volumes", []) if "secret" in v or "configMap" in v]
    kept = {v["name"] for v in volumes}
    mounts = [m for m in source.get("volumeMounts") or [] if m.get("name") in kept]
    container = {
        "name": CONTAINER,
        "image": source["image"],
        "command": preflight_script.command_line(preflight_script.start_of(pod)),
        "env": list(source.get("env") or []),
        "volumeMounts": [*mounts, {"name": "preflight", "mountPath": preflight_script.DIR}],
        # `update-compatibility metadata` builds into /opt/keycloak/lib when the options differ from the
        # image's (core/preflight_script.py says when it runs).
        "securityContext": {**(source.get("securityContext") or {}), "readOnlyRootFilesystem": False},
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    for key in ("resources", "imagePullPolicy"):  # pulled as the pods pull it
        if key in source:
            container[key] = source[key]
    shared = (
        "securityContext",
        "nodeSelector",
        "tolerations",
        "imagePullSecrets",
        "serviceAccountName",
        "priorityClassName",
        # From spec.unsupported.podTemplate: where and how the pods may run (a runtime class, a scheduler).
        "runtimeClassName",
        "schedulerName",
    )
    pod_spec: dict[str, Any] = {
        "containers": [container],
        "volumes": [*volumes, {"name": "preflight", "emptyDir": {}}],
        "enableServiceLinks": False,
        **{k: pod[k] for k in shared if k in pod},
    }
    # The servers' node affinity, not their pod anti-affinity: "one server per node" would keep the
    # preflight off every node a server runs on, which may be all of them.
    node_affinity = (pod.get("affinity") or {}).get("nodeAffinity")
    if node_affinity:
        pod_spec["affinity"] = {"nodeAffinity": node_affinity}
    annotations = {
        names.ANNOTATION_VERSION: rollout.version_of(desired),
        f"{names.GROUP}/from-version": running_version,
        names.ANNOTATION_IMAGE: source["image"],
    }
    return jobs.one_try(owner, name, COMPONENT, pod_spec, DEADLINE_S, annotations)


_DIGEST = re.compile(r"@(sha256:[0-9a-f]{64})$")


def repository(name: str) -> str:
    """`name`'s repository as a node reports it (containerd spells out the default registry and its
    `library/`: `keycloak` is `docker.io/library/keycloak`); "" when it does not parse."""
    ref = parse_image(name)
    if isinstance(ref, ImageParseError):
        return ""
    domain = "docker.io" if ref.domain in (None, "index.docker.io") else ref.domain
    path = f"library/{ref.path}" if domain == "docker.io" and "/" not in ref.path else ref.path
    return f"{domain}/{path}"


def digest_of(image_id: str, image: str) -> str:
    """The manifest digest in a container's `imageID` (`name@sha256:...`) when `name` is `image`'s own
    repository; "" for a bare image ID (`sha256:...` alone names the local image's config, which no
    registry resolves) and for a digest under another name. A node that holds the same bits under several
    names (a mirror, a second registry, a copy) reports one of them, and that repository's digest is not
    one `image`'s registry is known to serve: pinned to it, the pods could not pull."""
    image_id = image_id.strip()
    found = _DIGEST.search(image_id)
    if found is None:
        return ""
    own = repository(image)
    return found.group(1) if own and repository(image_id[: found.start()]) == own else ""


def pinned(image: str, digest: str) -> str:
    """`image` by `digest`: `name@sha256:...`, so every pod runs the bits the preflight proved; `image` as
    it is when there is no digest or it does not parse."""
    ref = parse_image(image)
    if not digest or isinstance(ref, ImageParseError):
        return image
    return f"{ref.name}@{digest}"


def tag_disagrees(image: str, version: str) -> str:
    """A message when `image`'s tag names a release other than the one inside it ("" when it agrees, names
    none, or no version was read). The image's version wins."""
    ref = parse_image(image)
    if not version or isinstance(ref, ImageParseError) or ref.tag is None:
        return ""
    tagged = parse_semver(ref.tag.removesuffix("-optimized"))
    inside = parse_semver(version)
    if tagged is None or inside is None or _release(tagged) == _release(inside):
        return ""
    return (
        f"image {_short(image)} is tagged {ref.tag} but contains Keycloak {version} (read from its files); "
        f"the operator plans from {version}"
    )


def _release(v: SemVer) -> tuple[int, int, int]:
    return (v.major, v.minor, v.patch)


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def of_job(job_obj: dict[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods the Job's controller made: anyone who may create pods in the namespace can give one the
    Job's name label, and its answer would be believed (a pass, a version, a digest to pin)."""
    uid = (job_obj.get("metadata") or {}).get("uid")
    return [
        p
        for p in pods
        if uid
        and any(
            r.get("controller") and r.get("kind") == "Job" and r.get("uid") == uid
            for r in (p.get("metadata") or {}).get("ownerReferences") or []
        )
    ]


def answer(
    name: str, job_obj: dict[str, Any] | None, pods: list[dict[str, Any]], owner: Owner, now: dt.datetime
) -> Answer:
    """The preflight's answer from its Job and the Job's pods (the newest decides)."""
    if job_obj is None:
        return Answer(name, "pending", message=f"Job {name}: not started yet")
    if not owner.owns(job_obj):
        return Answer(
            name,
            "foreign",
            exists=True,
            message=f"Job {name} exists and is not this Keycloak's: its answer is not read; the operator "
            "waits until it is deleted or renamed",
        )
    ended = jobs.ended(job_obj)
    status = _container_status(of_job(job_obj, pods))
    image = str(((job_obj.get("metadata") or {}).get("annotations") or {}).get(names.ANNOTATION_IMAGE, ""))
    digest = digest_of(str((status or {}).get("imageID") or ""), image)
    state = (status or {}).get("state") or {}
    if "terminated" in state:
        return _terminated(name, state["terminated"], digest)
    waiting = state.get("waiting") or {}
    reason = str(waiting.get("reason") or "")
    if reason in _PULL_FAILURES | _AT_ONCE:
        detail = _short(str(waiting.get("message") or reason), 600)
        failed = reason in _AT_ONCE or ended is not None or _age(pods, now) >= PULL_GRACE_S
        what = (
            "cannot be pulled" if reason in _PULL_FAILURES or reason == "InvalidImageName" else "cannot start"
        )
        text = f"image {_short(image)} {what} ({reason}): {detail}"
        if failed:
            return Answer(name, "failed", exists=True, message=text)
        return Answer(name, "pending", exists=True, message=f"Job {name}: {text}; retrying")
    if ended is not None:
        if ended.succeeded:  # its pod is gone: passed, with nothing read from the image
            return Answer(name, "passed", exists=True, message=f"Job {name}: passed (its pod is gone)")
        return Answer(
            name, "failed", exists=True, message=f"Job {name} failed ({ended.reason or 'no reason given'})"
        )
    started = "running" if "running" in state else "starting"
    return Answer(name, "pending", exists=True, digest=digest, message=f"Job {name}: {started}")


def _terminated(name: str, terminated: dict[str, Any], digest: str) -> Answer:
    report = parse_report(str(terminated.get("message") or ""))
    code = terminated.get("exitCode")
    if report is None and code == 0:
        # Exited 0 and wrote nothing: the image ran and nothing refused it, but nothing was read from it
        # either (a fake node's pod, one whose message was lost): passed, the tag speaks for the version.
        return Answer(
            name, "passed", exists=True, digest=digest, message=f"Job {name}: passed; no report was read"
        )
    if report is None:
        text = str(terminated.get("message") or terminated.get("reason") or "").strip()
        last = " | ".join(text.splitlines()[-preflight_script.TAIL_LINES :])
        return Answer(
            name,
            "failed",
            exists=True,
            digest=digest,
            message=_short(
                f"Job {name}: the image's check exited {code} without a report: {last}", _MESSAGE_MAX
            ),
        )
    if report.exit == 0 and code in (0, None):
        how = (
            f"configuration accepted (kc.sh {report.command})"
            if report.checked
            else "configuration not checked (no validating command in this version)"
        )
        found = f"Keycloak {report.version}" if report.version else "no Keycloak version in the image's files"
        return Answer(
            name,
            "passed",
            exists=True,
            version=report.version,
            digest=digest,
            message=f"{found}; {how}",
            rebuild=report.rebuild,
            changed=report.changed,
        )
    last = " | ".join(report.tail) or "(no output)"
    return Answer(
        name,
        "failed",
        exists=True,
        version=report.version,
        digest=digest,
        message=_short(
            f"Keycloak {report.version or '(version unknown)'} refused the configuration "
            f"(kc.sh {report.command or 'command'} exited {report.exit}): {last}",
            _MESSAGE_MAX,
        ),
    )


def _container_status(pods: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not pods:
        return None
    newest = max(pods, key=lambda p: str((p.get("metadata") or {}).get("creationTimestamp") or ""))
    for status in (newest.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == CONTAINER:
            return dict(status)
    return None


def _age(pods: list[dict[str, Any]], now: dt.datetime) -> float:
    """Seconds since the oldest pod was created (the pull has been tried that long)."""
    stamps = [str((p.get("metadata") or {}).get("creationTimestamp") or "") for p in pods]
    parsed = []
    for stamp in stamps:
        try:
            parsed.append(dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")))
        except ValueError:
            continue
    return (now - min(parsed)).total_seconds() if parsed else 0.0


def for_plan(found: Answer) -> str:
    """What `keycloak-operator plan` says of the preflight ("" when there is no image change)."""
    if found.state == "none":
        return ""
    if found.state == "passed":
        pinned_to = f"; digest {found.digest}" if found.digest else "; the node gave no digest to pin"
        return f"passed: {found.message}{pinned_to}"
    if found.state == "failed":
        return f"FAILED: {found.message}; the running pods keep serving"
    return f"{found.message}; nothing changes until it answers"
