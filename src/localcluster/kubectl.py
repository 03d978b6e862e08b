"""Runs the kubectl built for this cluster (Debian's is too old) against a given kubeconfig."""

from __future__ import annotations

import subprocess
from pathlib import Path

from localcluster import versions


class KubectlError(RuntimeError):
    """kubectl exited non-zero; the message carries its command line and stderr."""


def run(
    kubeconfig: Path,
    *args: str,
    input: str | None = None,
    check: bool = True,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    argv = [str(versions.bin_dir() / "kubectl"), f"--kubeconfig={kubeconfig}", *args]
    proc = subprocess.run(argv, input=input, capture_output=True, text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise KubectlError(f"kubectl {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc
