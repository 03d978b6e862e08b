"""The parts of the Keycloak pod that `spec.truststores`, `spec.extensions` and `spec.startOptimized` add:
volumes, mounts, init containers and Keycloak's start arguments.

Providers need a `kc.sh build` (Keycloak loads the jars at the top level of `providers/` into the built
application). `kc.sh start` would build at every container start, into the image's own `lib/quarkus`, which a
read-only root filesystem forbids and a container restart repeats. Instead, an init container builds once per
pod, in its own filesystem, and copies the result (`lib/quarkus`, which the build rewrites whole) into a
volume that Keycloak's container mounts at `lib/quarkus` and starts from with `--optimized`. Keycloak's
container then refuses to start if a build option differs from the build's, which cannot happen: both
containers get the same environment. Directory themes need no build.

Every command here is a fixed argument list: the only user values in it are an extension's path (a plain
absolute path by the CRD's pattern, never read by a shell) and its image.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from keycloak_operator.models.extensions import Extension
from keycloak_operator.models.keycloak import KeycloakSpec

HOME = "/opt/keycloak"
TRUSTSTORES_DIR = f"{HOME}/conf/truststores"  # read recursively by Keycloak at start
PROVIDERS_DIR = f"{HOME}/providers"
THEMES_DIR = f"{HOME}/themes"
BUILD_DIR = f"{HOME}/lib/quarkus"
STAGING_DIR = "/mnt"  # where the init containers see the shared volumes
PROVIDERS_VOLUME = "providers"
THEMES_VOLUME = "themes"
BUILD_VOLUME = "build"
BASE_CONTAINER = "extensions-base"
BUILD_CONTAINER = "build"
# The official image's user. An extension image may run as root (busybox does), which the pod's runAsNonRoot
# refuses: its copy runs as this user unless the spec names another. The copies land in world-writable
# emptyDirs, and Keycloak (this user) reads them.
KEYCLOAK_UID = 1000
# The image's own providers and themes first (an image built FROM Keycloak may carry some): the volumes
# hide the image's directories. Fixed text, no user value.
_COPY_BASE = (
    f"for d in {PROVIDERS_VOLUME} {THEMES_VOLUME}; do "
    f'if [ -d {HOME}/"$d" ]; then cp -R {HOME}/"$d"/. {STAGING_DIR}/"$d"/; fi; done'
)
_BUILD = f"{HOME}/bin/kc.sh build && cp -R {BUILD_DIR}/. {STAGING_DIR}/{BUILD_VOLUME}/"


@dataclass
class PodParts:
    """What the spec adds to the pod: volumes, the Keycloak container's mounts, init containers."""

    volumes: list[dict[str, Any]] = field(default_factory=list)
    mounts: list[dict[str, Any]] = field(default_factory=list)
    init_containers: list[dict[str, Any]] = field(default_factory=list)


def needs_build(spec: KeycloakSpec) -> bool:
    return any(e.type == "providers" for e in spec.extensions or [])


def start_args(spec: KeycloakSpec) -> list[str]:
    """`start`, which builds first; `start --optimized` when the image or an init container built it."""
    return ["start", "--optimized"] if spec.start_optimized or needs_build(spec) else ["start"]


def truststores(spec: KeycloakSpec) -> PodParts:
    parts = PodParts()
    for store in spec.truststores or []:
        volume = f"truststore-{store.name}"
        if store.secret is not None:
            source: dict[str, Any] = {"secret": {"secretName": store.secret.name}}
        elif store.config_map is not None:
            source = {"configMap": {"name": store.config_map.name}}
        else:
            continue  # the model requires exactly one source
        parts.volumes.append({"name": volume, **source})
        parts.mounts.append(
            {"name": volume, "mountPath": f"{TRUSTSTORES_DIR}/{store.name}", "readOnly": True}
        )
    return parts


def _staged(volume: str) -> dict[str, Any]:
    return {"name": volume, "mountPath": f"{STAGING_DIR}/{volume}"}


def _installed() -> list[dict[str, Any]]:
    """The staged providers and themes where Keycloak reads them (a new list each time: never shared)."""
    return [
        {"name": PROVIDERS_VOLUME, "mountPath": PROVIDERS_DIR},
        {"name": THEMES_VOLUME, "mountPath": THEMES_DIR},
    ]


def _copy(extension: Extension, security: dict[str, Any], run_as_user: int) -> dict[str, Any]:
    return {
        "name": f"extension-{extension.name}",
        "image": extension.image,
        "command": ["cp", "-R", f"{extension.path}/.", f"{STAGING_DIR}/{extension.type}/"],
        "volumeMounts": [_staged(extension.type)],
        "securityContext": {**security, "runAsUser": run_as_user},
    }


def extensions(spec: KeycloakSpec, env: list[dict[str, Any]], security: dict[str, Any]) -> PodParts:
    """Init containers that stage the extensions (and build, for providers) and the volumes they fill.
    `env` and `security` are the Keycloak container's: the build must see the same build options."""
    if not spec.extensions:
        return PodParts()
    user = spec.pod_security_context.run_as_user if spec.pod_security_context else None
    shared = [PROVIDERS_VOLUME, THEMES_VOLUME]
    parts = PodParts(
        volumes=[{"name": v, "emptyDir": {}} for v in shared],
        mounts=_installed(),
        init_containers=[
            {
                "name": BASE_CONTAINER,
                "image": spec.image,
                "command": ["/bin/sh", "-c", _COPY_BASE],
                "volumeMounts": [_staged(v) for v in shared],
                "securityContext": security,
            },
            *(_copy(e, security, user or KEYCLOAK_UID) for e in spec.extensions),
        ],
    )
    if needs_build(spec):
        parts.volumes.append({"name": BUILD_VOLUME, "emptyDir": {}})
        parts.mounts.append({"name": BUILD_VOLUME, "mountPath": BUILD_DIR})
        build: dict[str, Any] = {
            "name": BUILD_CONTAINER,
            "image": spec.image,
            "command": ["/bin/sh", "-c", _BUILD],
            "env": env,
            "volumeMounts": [*_installed(), _staged(BUILD_VOLUME)],
            # The build writes lib/quarkus in its own filesystem, whatever the spec says of Keycloak's.
            "securityContext": {**security, "readOnlyRootFilesystem": False},
        }
        if spec.resources is not None:  # the build is a JVM as large as Keycloak's
            build["resources"] = spec.resources.wire()
        parts.init_containers.append(build)
    return parts
