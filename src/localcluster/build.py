"""Makes sure the binaries built from Go modules exist (the control plane, the real node's, and single tools:
helm and promtool), building them on the first run."""

from __future__ import annotations

import subprocess
from pathlib import Path

from localcluster import versions

SCRIPT = Path(__file__).resolve().parents[2] / "hack" / "build-control-plane.sh"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok")
NODE_SCRIPT = SCRIPT.with_name("build-node.sh")
# pause and netcheck are the static programs of the images assembled for the real node (hack/node/*.go).
NODE_BINARIES = ("kubelet", "kube-proxy", "coredns", "pause", "netcheck")
# One command from one Go module (helm, promtool): DIR NAME PACKAGE VERSION [LDFLAGS...].
TOOL_SCRIPT = SCRIPT.with_name("build-go-tool.sh")


class BuildError(RuntimeError):
    """The control-plane binaries could not be built."""


def _run(script: Path, args: list[str], binaries: tuple[str, ...], bin_dir: Path) -> Path:
    # stderr is inherited so a cold build shows progress instead of looking hung.
    proc = subprocess.run(["bash", str(script), *args], stdout=subprocess.PIPE, text=True, check=False)
    if proc.returncode != 0:
        raise BuildError(f"{script.name} failed with exit code {proc.returncode}; see its output above")
    missing = [b for b in binaries if not (bin_dir / b).is_file()]
    if missing:
        raise BuildError(f"{script.name} finished but {', '.join(missing)} missing in {bin_dir}")
    return bin_dir


def ensure_binaries() -> Path:
    """Returns the bin dir. The script is a no-op when everything is cached; a cold build takes ~15 min."""
    args = [str(versions.build_dir()), versions.K8S_VERSION, versions.ETCD_VERSION, versions.KWOK_VERSION]
    return _run(SCRIPT, args, BINARIES, versions.bin_dir())


def ensure_node_binaries() -> Path:
    """The real node's bin dir (kubelet, kube-proxy, CoreDNS, image programs); a cold build takes ~10 min."""
    args = [str(versions.node_build_dir()), versions.K8S_VERSION, versions.COREDNS_VERSION]
    return _run(NODE_SCRIPT, args, NODE_BINARIES, versions.node_bin_dir())


def ensure_tool(name: str, package: str, version: str, *ldflags: str) -> Path:
    """The command `package` (an import path in a Go module) at `version`, built once into the cache as
    `name` (in a directory keyed by name and version). Returns its path."""
    target = versions.cache_root() / f"{name}-{version}"
    return _run(TOOL_SCRIPT, [str(target), name, package, version, *ldflags], (name,), target) / name


def ensure_promtool() -> Path:
    """promtool (Prometheus' rule checker, for the chart's alerts). Returns its path. Measured cold (empty Go
    module and build caches) on two cores shared with a CI run, at nice 19: 8 min 9 s, 350 s of CPU."""
    version = versions.PROMETHEUS_VERSION
    stamp = f"-X github.com/prometheus/common/version.Version={version.removeprefix('v')}"
    return ensure_tool("promtool", "github.com/prometheus/prometheus/cmd/promtool", version, stamp)
