"""The helm CLI, built from its Go module on first use and cached outside the repository by version."""

from __future__ import annotations

import subprocess
from pathlib import Path

from localcluster import versions
from localcluster.build import BuildError

SCRIPT = Path(__file__).resolve().parents[2] / "hack" / "build-helm.sh"


def ensure_helm() -> Path:
    target = versions.cache_root() / f"helm-{versions.HELM_VERSION}"
    proc = subprocess.run(
        ["bash", str(SCRIPT), str(target), versions.HELM_VERSION],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    helm = target / "helm"
    if proc.returncode != 0 or not helm.is_file():
        raise BuildError(f"{SCRIPT.name} failed with exit code {proc.returncode}; see its output above")
    return helm
