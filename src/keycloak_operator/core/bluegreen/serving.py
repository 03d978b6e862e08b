"""What the rest of the operator asks of the machine: which image and track serve, and whether it is busy.

The normal reconcile renders the canonical Deployment and the public Service with these, so it never rolls
the new image into blue and never moves traffic behind the machine's back.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import rollout
from keycloak_operator.core.bluegreen.model import AT_REST, COMPLETED, FAILED, IDLE, ON_GREEN, PROMOTING
from keycloak_operator.kernel import names
from keycloak_operator.models.upgrade_status import BlueGreenStatus


def backup_name(keycloak: str, green_image: str, started_at: str) -> str:
    """Deterministic per upgrade, so a retry or a restarted operator finds the backup it already asked for.
    The space separates the parts (it can appear in neither an image reference nor a timestamp)."""
    return f"{keycloak}-pre-{names.short_hash(green_image + ' ' + started_at)}"


def is_deleting(deployment: dict[str, Any] | None) -> bool:
    return deployment is not None and bool(deployment.get("metadata", {}).get("deletionTimestamp"))


def uid_of(deployment: dict[str, Any]) -> str:
    return str(deployment.get("metadata", {}).get("uid", ""))


def green_rolled_out(keycloak: str, deployment: dict[str, Any]) -> bool:
    """`deployment` is this Keycloak's green and every replica is up: traffic waits on the cutover now.
    Told by name against the owner's (a Keycloak named "x-green" has no green of "x")."""
    return (
        deployment.get("metadata", {}).get("name") == names.deployment(keycloak, green=True)
        and not is_deleting(deployment)
        and rollout.rollout_complete(deployment)
    )


def serving_pods(slices: list[dict[str, Any]]) -> int:
    """How many distinct pods these EndpointSlices list as serving and not terminating.

    `serving`, not `ready`: discovery Services publish not-ready addresses, so their `ready` is always true;
    `serving` is the pod's own readiness. An endpoint without the condition counts as not serving.
    """
    pods = set()
    for s in slices:
        for endpoint in s.get("endpoints") or []:
            conditions = endpoint.get("conditions") or {}
            if conditions.get("serving") is True and conditions.get("terminating") is not True:
                ref = endpoint.get("targetRef") or {}
                pods.add(ref.get("name") or tuple(endpoint.get("addresses") or ()))
    return len(pods)


def in_flight(status: BlueGreenStatus | None) -> bool:
    """An upgrade is under way: the machine, not the normal reconcile, decides about both Deployments."""
    return status is not None and status.state not in AT_REST


def blue_kept(status: BlueGreenStatus | None, blue: dict[str, Any] | None) -> bool:
    """Completed with autoTeardown false: green serves under its green name, the canonical Deployment is
    still the old blue. Read from the world (the canonical's track), so no extra status field is needed:
    after a promotion the canonical carries green's track instead."""
    return (
        status is not None
        and status.state == COMPLETED
        and blue is not None
        and bool(status.blue_track)
        and status.blue_track != status.green_track
        and rollout.track_of(blue) == status.blue_track
    )


def serving_image(status: BlueGreenStatus | None, spec_image: str, blue: dict[str, Any] | None) -> str:
    """The image the canonical Deployment must have now.

    blue_image while an upgrade is in flight, while blue is kept, and after a failure for as long as the spec
    still asks for the failed image; green's image while it is being promoted; the spec's image otherwise.
    """
    if status is None or status.state == IDLE:
        return spec_image
    if status.state == PROMOTING:
        return status.green_image
    if status.state == COMPLETED:
        return status.blue_image if blue_kept(status, blue) else spec_image
    if status.state == FAILED:
        return status.blue_image if spec_image == status.green_image else spec_image
    return status.blue_image


def serving_track(status: BlueGreenStatus | None, default: str) -> str:
    """The track the public Service selects: green's from cutover on, blue's otherwise."""
    if status is None:
        return default
    track = status.green_track if status.state in ON_GREEN else status.blue_track
    return track or default
