"""Starts, reuses and stops the loopback control plane: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok (playing the kubelets of a few fake Nodes)."""

from __future__ import annotations

import contextlib
import shutil
import ssl
import time
from collections.abc import Callable
from pathlib import Path

from localcluster import build, components, hostnet, http, kubeconfig, nodes, pki, process, stages, versions
from localcluster.cluster import Cluster
from localcluster.layout import FIRST_SERVICE_IP, Layout
from localcluster.state import Component, State, load

START_TIMEOUT = 90.0


class ComponentError(RuntimeError):
    """A control-plane component did not start or become healthy; the message names it and shows its log."""

    def __init__(self, component: str, reason: str, log: Path) -> None:
        self.component = component
        super().__init__(
            f"{component} failed to start: {reason}\n"
            f"--- last {process.TAIL_LINES} lines of {log} ---\n{process.tail(log)}"
        )


def _lock(layout: Layout) -> contextlib.AbstractContextManager[None]:
    # Next to the state dir, not inside it, because stop() removes the state dir.
    return process.exclusive(layout.root.parent / f".{layout.root.name}.lock")


class _Starter:
    """Starts one component after another, recording each pid before waiting on it."""

    def __init__(self, layout: Layout, state: State) -> None:
        self.layout = layout
        self.state = state

    def start(
        self, name: str, argv: list[str], healthy: Callable[[], bool], timeout: float = START_TIMEOUT
    ) -> None:
        log = self.layout.log(name)
        pid = process.spawn(argv, log, cwd=self.layout.root)
        self.state.components.append(Component(name, pid, argv[0], str(log)))
        self.state.save(self.layout.root)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not process.alive(pid):
                raise ComponentError(name, "the process exited", log)
            if healthy():
                return
            time.sleep(0.2)
        raise ComponentError(name, f"not healthy after {timeout:.0f}s", log)


def _ok(url: str, ctx: ssl.SSLContext | None = None, body: str | None = None) -> Callable[[], bool]:
    def probe() -> bool:
        status, text = http.get(url, ctx, timeout=2)
        return status == 200 and (body is None or body in text)

    return probe


def _start(bin_dir: Path, layout: Layout) -> Cluster:
    if layout.root.exists():
        shutil.rmtree(layout.root)
    layout.logs.mkdir(parents=True)
    layout.audit_policy.write_text(components.AUDIT_POLICY)
    layout.recipe.write_text(components.recipe())
    files = pki.create(layout.pki, FIRST_SERVICE_IP)
    etcd_port, peer_port, api_port = process.free_port(), process.free_port(), process.free_port()
    etcd_url, server = f"http://127.0.0.1:{etcd_port}", f"https://127.0.0.1:{api_port}"
    state = State(server=server, etcd_url=etcd_url, kubeconfig=str(layout.kubeconfig.resolve()))
    starter = _Starter(layout, state)
    cluster = Cluster(layout.kubeconfig.resolve(), server, bin_dir, layout.root.resolve())
    try:
        starter.start(
            "etcd",
            components.etcd(bin_dir, layout, etcd_port, peer_port),
            _ok(f"{etcd_url}/health", body='"health":"true"'),
        )
        admin_ctx = http.context(files.ca.cert, files.admin)
        starter.start(
            "kube-apiserver",
            components.kube_apiserver(bin_dir, files, etcd_url, api_port, layout, hostnet.primary_address()),
            _ok(f"{server}/readyz", admin_ctx),
        )
        kubeconfig.write_cert(layout.kubeconfig, server, files.ca.cert, "kcop-admin", files.admin)
        for name, pair in (
            ("kube-controller-manager", files.controller_manager),
            ("kube-scheduler", files.scheduler),
        ):
            kubeconfig.write_cert(layout.component_kubeconfig(name), server, files.ca.cert, name, pair)
        # kwok reads its stages from the cluster, so they must exist before it starts.
        stages.install_defaults(layout.kubeconfig)
        unverified = http.context(None, None)
        port = process.free_port()
        starter.start(
            "kube-controller-manager",
            components.kube_controller_manager(bin_dir, layout, files, port),
            _ok(f"https://127.0.0.1:{port}/healthz", unverified),
        )
        port = process.free_port()
        starter.start(
            "kube-scheduler",
            components.kube_scheduler(bin_dir, layout, files, port),
            _ok(f"https://127.0.0.1:{port}/healthz", unverified),
        )
        port = process.free_port()
        starter.start(
            "kwok", components.kwok(bin_dir, layout.kubeconfig, port), _ok(f"http://127.0.0.1:{port}/healthz")
        )
        _add_nodes(cluster, layout)
        _wait_default_service_account(cluster, layout)
    except BaseException:
        _stop_components(state)
        (layout.root / "state.json").unlink(missing_ok=True)
        raise
    return cluster


def _add_nodes(cluster: Cluster, layout: Layout) -> None:
    cluster.kubectl("apply", "-f", "-", input=nodes.manifest_list())
    names = nodes.names()
    if not nodes.wait_ready(lambda: cluster.kubectl("get", "nodes", "-o", "json").stdout, names, 60):
        raise ComponentError("kwok", f"nodes {names} not Ready after 60s", layout.log("kwok"))


def _wait_default_service_account(cluster: Cluster, layout: Layout) -> None:
    # The serviceaccount controller creating `default` shows kube-controller-manager really works.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if cluster.kubectl("get", "serviceaccount", "default", "-n", "default", check=False).returncode == 0:
            return
        time.sleep(0.3)
    raise ComponentError(
        "kube-controller-manager",
        "no `default` ServiceAccount after 60s",
        layout.log("kube-controller-manager"),
    )


def _stop_components(state: State) -> None:
    for c in reversed(state.components):
        process.terminate(c.pid, Path(c.executable))


def _stop_real_node(layout: Layout) -> None:
    """A real node and its registry (started separately, see realnode and registry) must go first: their
    containers, mounts, bridge and storage live under the state dir that is about to be removed."""
    from localcluster import realnode, registry  # they import this module

    realnode.stop(layout.root)
    registry.stop(layout.root)


def _reusable(state: State | None, bin_dir: Path, layout: Layout) -> Cluster | None:
    if state is None or not state.components:
        return None
    expected = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]
    if [c.name for c in state.components] != expected:
        return None
    recipe = layout.recipe.read_text() if layout.recipe.exists() else None
    if recipe != components.recipe():
        return None  # started by another version of this harness: other flags, policy or certificates
    for c in state.components:
        exe = Path(c.executable)
        # A cluster run by other binaries (an older version) is replaced rather than reused.
        if exe.parent != bin_dir or not process.alive(c.pid) or not process.is_ours(c.pid, exe):
            return None
    cluster = Cluster(Path(state.kubeconfig), state.server, bin_dir, layout.root.resolve())
    return cluster if cluster.ready() else None


def ensure_running() -> Cluster:
    """Reuses the healthy cluster of the state dir or starts a fresh one (building binaries if needed)."""
    bin_dir = build.ensure_binaries()
    layout = Layout(versions.cluster_dir())
    with _lock(layout):
        state = load(layout.root)
        cluster = _reusable(state, bin_dir, layout)
        if cluster is not None:
            return cluster
        # Whatever the state file says (torn, or gone): the real node and the registry keep their own
        # records under the state dir that _start removes, and would be orphaned otherwise.
        _stop_real_node(layout)
        if state is not None:
            _stop_components(state)
        return _start(bin_dir, layout)


def stop() -> bool:
    """Stops each recorded component by its own pid and removes the state dir; False if none was recorded."""
    layout = Layout(versions.cluster_dir())
    with _lock(layout):
        state = load(layout.root)
        _stop_real_node(layout)
        if state is not None:
            _stop_components(state)
        if layout.root.exists():
            shutil.rmtree(layout.root)
        return state is not None


def status() -> list[tuple[str, int, bool]]:
    """(component, pid, alive) for each recorded component; empty when no cluster is recorded."""
    state = load(versions.cluster_dir())
    if state is None:
        return []
    return [
        (c.name, c.pid, process.alive(c.pid) and process.is_ours(c.pid, Path(c.executable)))
        for c in state.components
    ]


def current() -> Cluster | None:
    """The recorded cluster if it answers /readyz, without starting anything."""
    layout = Layout(versions.cluster_dir())
    return _reusable(load(layout.root), versions.bin_dir(), layout)
