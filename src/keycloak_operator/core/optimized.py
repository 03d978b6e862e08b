"""Optimized starts found and used (issue 28, ADR 0026): the pods start `--optimized` when their image was
built with exactly the build options they set, and the `Optimized` condition says which differ when not.

What the image was built with comes from its preflight (core/preflight.py): the dry run of the pods' own
`start` is Keycloak's answer to "would this start build first?" (it prints "Changes detected in
configuration" exactly when it would) and, for an image `kc.sh build` made, the image's values of the options
it would change. With the options the pods set then (core/build_options.py), that is the image's whole
build, recorded in status.preflight; every later rendering compares it with the options its pods set, so a
build option changed since (a feature) starts them without `--optimized` again, with no new preflight.

Pure.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Final

from keycloak_operator.core import build_options, pod_extensions
from keycloak_operator.core.build_options import BuildOptions
from keycloak_operator.core.common import conditions
from keycloak_operator.core.images import parse_semver, release_of
from keycloak_operator.core.preflight import Answer
from keycloak_operator.core.releases import DRY_RUN_SINCE, line_of
from keycloak_operator.models.upgrade_status import PreflightStatus

CONDITION: Final = "Optimized"
READ: Final = "Read"
NOT_BUILT: Final = "NotBuilt"
DIFFERS: Final = "Differs"
SHOWN_MAX: Final = 32
SHOWN_LENGTH: Final = 200
_SHA256: Final = re.compile(r"^[0-9a-f]{64}$")
_RECIPE: Final = "keycloak-operator image-recipe prints a Containerfile for one"


def digest(options: dict[str, str]) -> str:
    """SHA-256 of a set of build options (sorted, as JSON): equal sets, equal digests."""
    return hashlib.sha256(json.dumps(sorted(options.items())).encode()).hexdigest()


def image_build(rendered: BuildOptions, found: Answer) -> tuple[str, dict[str, str]]:
    """(build, the image's build options) from a passed preflight whose pods set `rendered`:
    - Read, the pods' options: Keycloak said their start builds nothing, so the image holds exactly those;
    - Differs, the pods' options with the image's values of those Keycloak named: shown, never a proof, as
      its answer keeps at most 16 changes, cut, and may hide a provider's difference behind an option's;
    - NotBuilt when it would build and names nothing (an image never built, or one differing only where
      Keycloak names no option);
    - "" when it was not asked (another command checked, or none did)."""
    if found.state != "passed" or found.rebuild is None:
        return "", {}
    if not found.rebuild:
        return READ, rendered.as_dict()
    if not found.changed:
        return NOT_BUILT, {}
    image = rendered.as_dict()
    for change in found.changed:
        if change.image is None:
            image.pop(change.option, None)
        else:
            image[change.option] = change.image
    return DIFFERS, image


def recorded(build: str, image: dict[str, str]) -> dict[str, Any]:
    """The status.preflight fields for what `image_build` found: a digest only of a build Keycloak said the
    pods' start matches (Read), the one thing that ever starts pods `--optimized`."""
    if build not in (READ, DIFFERS):
        return {"build": build, "build_options": [], "build_digest": ""}
    shown = [f"{k}={v}"[:SHOWN_LENGTH] for k, v in sorted(image.items())][:SHOWN_MAX]
    return {"build": build, "build_options": shown, "build_digest": digest(image) if build == READ else ""}


@dataclass(frozen=True)
class Verdict:
    optimized: bool
    reason: str
    message: str


def verdict(proof: PreflightStatus | None, image: str, pod: dict[str, Any]) -> Verdict | None:
    """Whether pods of pod spec `pod` (rendered for `image`) start `--optimized` from the image's own build;
    None when nothing is known of it (no passed preflight of `image` asked Keycloak) or the pods' start is
    not the operator's to choose (`startOptimized`, or provider extensions built by an init container)."""
    if (
        proof is None
        or proof.image != image
        or proof.state != "Passed"
        or proof.build not in (READ, NOT_BUILT, DIFFERS)
    ):
        return None
    if pod_extensions.BUILD_CONTAINER in {c.get("name") for c in pod.get("initContainers") or []}:
        return None
    if "--optimized" in _keycloak(pod).get("args", []):
        return None
    version = parse_semver(proof.version) or release_of(image)
    if version is None or line_of(version) < DRY_RUN_SINCE or _older_tag(image):
        # No preflight there could have asked (`start --dry-run` is newer), so a record is not the
        # operator's; and 25.x only warns when build options differ, so a pod started `--optimized` on a
        # wrong record would run with the image's options, not refuse to start.
        return None
    pods = build_options.of_pod(pod, version)
    if proof.build == NOT_BUILT:
        return Verdict(
            False,
            "ImageNotBuilt",
            f"image {image} was not built with kc.sh build for the options the pods set (or differs where "
            f"Keycloak names no option: its providers, Quarkus properties): every pod start builds first; "
            f"{_RECIPE}",
        )
    if pods.unknown:
        return Verdict(
            False,
            "BuildOptionsFromSecrets",
            f"the build options {', '.join(pods.unknown)} take their values from a Secret or ConfigMap, "
            "which can change under a running image: the pods start without --optimized",
        )
    wanted = pods.as_dict()
    if proof.build == READ and _SHA256.fullmatch(proof.build_digest) and proof.build_digest == digest(wanted):
        return Verdict(True, "ImageBuilt", f"image {image} was built with exactly the pods' build options")
    return Verdict(False, "BuildOptionsDiffer", _differences(proof.build_options, wanted, image))


def _older_tag(image: str) -> bool:
    """The tag names a line older than the dry run: believed over a recorded version that says otherwise."""
    tagged = release_of(image)
    return tagged is not None and line_of(tagged) < DRY_RUN_SINCE


def _shown(options: dict[str, str]) -> dict[str, str]:
    """`options` as status.preflight.buildOptions shows them (each entry cut)."""
    cut = (f"{k}={v}"[:SHOWN_LENGTH].partition("=") for k, v in options.items())
    return {k: v for k, _, v in cut}


def _differences(shown: list[str], wanted: dict[str, str], image: str) -> str:
    built = {k: v for k, eq, v in (e.partition("=") for e in shown[:SHOWN_MAX]) if eq}
    pods = _shown(wanted)
    differ = [
        f"{n}: image {built.get(n, '<unset>')}, pods {pods.get(n, '<unset>')}"
        for n in sorted(set(built) | set(pods))
        if built.get(n) != pods.get(n)
    ]
    listed = (
        "; ".join(differ)
        if differ
        else "where the preflight's record does not show them: a value longer than shown, an option past "
        "those Keycloak listed, or a provider; a new image's preflight asks again"
    )
    return (
        f"image {image} was built with other build options than the pods set ({listed}): every pod start "
        f"builds first; {_RECIPE}"
    )


def _keycloak(pod: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in pod.get("containers") or [] if c.get("name") == "keycloak"), {})


def apply(deployment: dict[str, Any], found: Verdict | None) -> dict[str, Any]:
    """`deployment` with its Keycloak container started `--optimized` when `found` says the image allows."""
    if found is None or not found.optimized:
        return deployment
    keycloak = _keycloak(deployment["spec"]["template"]["spec"])
    if keycloak.get("args") == ["start"]:
        keycloak["args"] = ["start", "--optimized"]
    return deployment


def condition(found: Verdict | None) -> conditions.Wanted | None:
    """The Optimized condition, present while the image's build is known."""
    if found is None:
        return None
    return conditions.Wanted(CONDITION, "True" if found.optimized else "False", found.reason, found.message)
