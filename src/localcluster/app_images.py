"""The images tests and the demo run on the real node (Keycloak, PostgreSQL, the operator itself): built here
by the hack/ scripts (no engine: ADR 0013, ADR 0015), cached by version, and imported into the node's
containerd when it lacks them or holds another build. Pods use them with `imagePullPolicy: Never`. An image
that must be pulled as from a registry (`:latest`, a digest to pin) is pushed to the cluster's (registry).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import yaml

from localcluster import node_images
from localcluster.cluster import Cluster
from localcluster.node_config import NodeLayout
from localcluster.registry import Registry

HACK = Path(__file__).resolve().parents[2] / "hack"
CHART = HACK.parent / "deploy" / "helm" / "keycloak-operator"
POSTGRES_IMAGE = "docker.io/library/postgres:15"
BUILD_TIMEOUT = 900  # a cold Debian root filesystem and a Keycloak download on a slow mirror


class ImageBuildError(RuntimeError):
    """A hack/build-*-image.sh script failed; the message carries its output's tail."""


def keycloak_image(version: str) -> str:
    return f"quay.io/keycloak/keycloak:{version}"


def operator_image_ref() -> str:
    """The chart's default operator image: values.yaml's image.repository at its tag, else the chart's
    appVersion. The chart installed with its defaults then runs the image built here (once it is on the node,
    `IfNotPresent` never pulls)."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    return f"{values['image']['repository']}:{values['image']['tag'] or chart['appVersion']}"


def _build(script: str, *args: str) -> Path:
    # The scripts run localcluster.image_build with this very interpreter, not whatever python3 is first
    # on PATH (a fresh machine's lacks the project's dependencies).
    env = {**os.environ, "KCOP_PYTHON": sys.executable}
    proc = subprocess.run(
        [str(HACK / script), *args],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
        env=env,
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr + proc.stdout).splitlines()[-30:])
        raise ImageBuildError(f"hack/{script} {' '.join(args)} failed ({proc.returncode}):\n{tail}")
    return Path(proc.stdout.strip().splitlines()[-1])


def manifest_digest(archive: Path) -> str:
    """The digest containerd lists for the image once imported: the manifest that index.json points at."""
    with tarfile.open(archive) as tar:
        member = tar.extractfile("index.json")
        if member is None:
            raise ImageBuildError(f"{archive} has no index.json")
        index = json.load(member)
    return str(index["manifests"][0]["digest"])


def ensure_on_node(cluster: Cluster, archive: Path, ref: str) -> str:
    """Imports `archive` as `ref` unless the node already holds that very build; returns `ref`."""
    socket = NodeLayout(cluster.state_dir / "realnode").containerd_socket
    if node_images.present(socket).get(ref) != manifest_digest(archive):
        node_images.import_archive(socket, archive)
    return ref


def keycloak(cluster: Cluster, version: str) -> str:
    """quay.io/keycloak/keycloak:<version> on the real node, as the local cluster, the demo and the tests run
    it: the distribution after `kc.sh build` with the build-time options the operator's pods set by default
    (build-keycloak-image.sh --optimized), so those pods start without re-augmenting, and `--optimized`
    once a preflight has found the build (ADR 0026). A Keycloak whose settings change a build-time option
    (features, say) re-augments at start as on the stock image; `keycloak_stock` is the stock one."""
    return ensure_on_node(
        cluster,
        _build("build-keycloak-image.sh", version, keycloak_image(version), "--optimized"),
        keycloak_image(version),
    )


def keycloak_stock(cluster: Cluster, version: str, ref: str) -> str:
    """The stock distribution's image, never built (every `start` re-augments), as `ref` on the real node:
    for what is about the re-augmenting path itself. Its own reference, as the archive is cached per
    reference."""
    return ensure_on_node(cluster, _build("build-keycloak-image.sh", version, ref), ref)


def keycloak_tagged(cluster: Cluster, version: str, ref: str) -> str:
    """quay.io/keycloak/keycloak:<version> on the real node under one more name, `ref` (fully qualified as
    containerd names it, e.g. docker.io/library/keycloak:latest): a locally built image tagged so. The same
    image, so containerd still knows it by its image ID only (no registry digest): tagging gives it none."""
    source = keycloak(cluster, version)
    socket = NodeLayout(cluster.state_dir / "realnode").containerd_socket
    have = node_images.present(socket)
    if have.get(ref) != have.get(source):
        proc = node_images.ctr(socket, "images", "tag", "--force", source, ref)
        if proc.returncode != 0:
            raise ImageBuildError(f"ctr images tag {source} {ref} failed: {proc.stderr.strip()}")
    return ref


def keycloak_pushed(registry: Registry, version: str, repository: str, tag: str) -> str:
    """The image `keycloak` builds for `version`, pushed to the cluster's registry as repository:tag (pushed
    again only when the tag names another manifest); returns its reference there. The node pulls it as from
    any registry, so its pods' imageID carries the registry's digest."""
    archive = _build("build-keycloak-image.sh", version, keycloak_image(version), "--optimized")
    if registry.digest(repository, tag) != manifest_digest(archive):
        registry.push(archive, registry.ref(repository, tag))
    return registry.ref(repository, tag)


def postgres(cluster: Cluster) -> str:
    """A PostgreSQL 15 image from Debian's package on the real node (POSTGRES_USER/PASSWORD/DB, PGDATA)."""
    return ensure_on_node(cluster, _build("build-postgres-image.sh"), POSTGRES_IMAGE)


def operator(cluster: Cluster) -> str:
    """The operator's own image, from this checkout's source (hack/build-operator-image.sh: the Dockerfile's
    recipe without an engine), on the real node; rebuilt when the source or uv.lock changes."""
    ref = operator_image_ref()
    return ensure_on_node(cluster, _build("build-operator-image.sh", ref), ref)
