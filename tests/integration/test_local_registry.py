"""The local cluster's registry (ADR 0029) as a stage of the running cluster: `make cluster`
(localcluster.ensure_running) brings it up or reuses it, it listens on loopback only, and once its process
is gone the next start replaces it, keeping what it stored and its port. The real node's pulls through it
are in test_real_recreate.py (`latest_from_the_registry_runs_by_its_digest`).

No skip: a registry that is not installed (`make host-packages`) or cannot be started fails these tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import localcluster
from localcluster import app_images, process, registry, versions

pytestmark = pytest.mark.integration

# The real node's pause image (a few hundred kilobytes), written by node_images at the node's start.
PAUSE_ARCHIVE = versions.node_build_dir() / "images" / "pause.oci.tar"
PUSHED = ("kcop-test/pause", "1")


@pytest.fixture(scope="module")
def cluster() -> localcluster.Cluster:
    return localcluster.ensure_running()


def recorded(cluster: localcluster.Cluster) -> registry.RegistryState:
    state = registry.load(cluster.state_dir / registry.NAME)
    assert state is not None, "no registry recorded after localcluster.ensure_running()"
    return state


def test_the_cluster_includes_its_registry_and_reuses_it(cluster: localcluster.Cluster) -> None:
    before = recorded(cluster)
    assert before.component.executable == str(registry.BINARY)  # Debian's docker-registry
    served = registry.current(cluster.state_dir)
    assert served is not None and served.host == f"127.0.0.1:{before.port}"
    assert localcluster.ensure_running() == cluster
    assert recorded(cluster) == before  # the same process, not a second one
    config = json.loads((cluster.state_dir / registry.NAME / "config.json").read_text())
    assert config["http"]["addr"] == f"127.0.0.1:{before.port}"  # loopback only
    assert Path(config["storage"]["filesystem"]["rootdirectory"]).is_relative_to(cluster.state_dir)


def test_a_registry_whose_process_died_is_started_again_with_what_it_stored(
    cluster: localcluster.Cluster,
) -> None:
    served = registry.current(cluster.state_dir)
    assert served is not None
    served.push(PAUSE_ARCHIVE, served.ref(*PUSHED))
    digest = served.digest(*PUSHED)
    assert digest == app_images.manifest_digest(PAUSE_ARCHIVE)  # the archive's manifest, unchanged
    dead = recorded(cluster)
    process.terminate(dead.component.pid, Path(dead.component.executable))
    assert registry.current(cluster.state_dir) is None

    localcluster.ensure_running()
    again = registry.current(cluster.state_dir)
    assert again is not None, "the registry was not started again"
    assert recorded(cluster).component.pid != dead.component.pid
    assert again.host == served.host  # the same port: the node's references to it stay one repository
    assert again.digest(*PUSHED) == digest
