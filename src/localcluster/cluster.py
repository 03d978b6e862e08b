"""Handle on a running local cluster: what tests and tools need to talk to it."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from localcluster import http, kubectl, pki
from localcluster.layout import Layout


@dataclass(frozen=True)
class Cluster:
    kubeconfig: Path  # admin (system:masters)
    server: str  # https://127.0.0.1:<port>
    bin_dir: Path  # kubectl and friends, built for this Kubernetes version
    state_dir: Path

    @property
    def layout(self) -> Layout:
        return Layout(self.state_dir)

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """kubectl as admin; raises KubectlError on failure when check is true."""
        return kubectl.run(self.kubeconfig, *args, input=input, check=check, timeout=timeout)

    def _admin_get(self, path: str) -> tuple[int, str]:
        files = pki.at(self.layout.pki)
        ctx = http.context(files.ca.cert, files.admin)
        return http.get(self.server + path, ctx, timeout=10)

    def ready(self) -> bool:
        return self._admin_get("/readyz")[0] == 200

    def metrics(self) -> str:
        """kube-apiserver's Prometheus metrics, read as admin."""
        status, body = self._admin_get("/metrics")
        if status != 200:
            raise RuntimeError(f"GET {self.server}/metrics answered {status}: {body[:500]}")
        return body
