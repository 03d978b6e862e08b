"""Makes sure the control-plane binaries exist, building them from Go modules on the first run."""

from __future__ import annotations

import subprocess
from pathlib import Path

from localcluster import versions

SCRIPT = Path(__file__).resolve().parents[2] / "hack" / "build-control-plane.sh"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kwok")


class BuildError(RuntimeError):
    """The control-plane binaries could not be built."""


def ensure_binaries() -> Path:
    """Returns the bin dir. The script is a no-op when everything is cached; a cold build takes ~15 min."""
    target = versions.build_dir()
    # stderr is inherited so a cold build shows progress instead of looking hung.
    proc = subprocess.run(
        [
            "bash",
            str(SCRIPT),
            str(target),
            versions.K8S_VERSION,
            versions.ETCD_VERSION,
            versions.KWOK_VERSION,
        ],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise BuildError(f"{SCRIPT.name} failed with exit code {proc.returncode}; see its output above")
    missing = [b for b in BINARIES if not (versions.bin_dir() / b).is_file()]
    if missing:
        raise BuildError(f"{SCRIPT.name} finished but {', '.join(missing)} missing in {versions.bin_dir()}")
    return versions.bin_dir()
