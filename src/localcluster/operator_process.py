"""Runs the operator as a real process on the local control plane, so tests can SIGKILL and restart it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


class OperatorProcess:
    def __init__(
        self,
        kubeconfig: Path,
        log_dir: Path,
        *,
        resync_seconds: float = 5.0,
        extra_env=None,
        cluster_dns: str | None = None,
        metrics_port: int | None = None,
    ):
        """`cluster_dns`: the cluster's DNS server (kube-dns' ClusterIP). The process then resolves names as a
        pod does, through its own /etc/resolv.conf (bind-mounted in a private mount namespace), so it reaches
        `<svc>.<ns>.svc.cluster.local.` names of Keycloaks on the real node as it would in the cluster.
        `metrics_port`: every start serves Prometheus metrics there (`metrics_url`), restarts included."""
        self.kubeconfig = kubeconfig
        self.cluster_dns = cluster_dns
        self.metrics_port = metrics_port
        self.log_dir = log_dir
        self.resync_seconds = resync_seconds
        self.extra_env = dict(extra_env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def metrics_url(self) -> str:
        if self.metrics_port is None:
            raise RuntimeError("this operator was made without a metrics_port")
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"operator-{self.starts}.log"

    def start(self, *args: str, env: dict[str, str] | None = None) -> None:
        """`env` adds variables for this start only (a failpoint, say)."""
        if self.alive():
            raise RuntimeError("already running: stop() or kill() it first (a second start would leak it)")
        self.starts += 1
        env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "KCOP_RESYNC_SECONDS": str(self.resync_seconds),
            **self.extra_env,
            **(env or {}),
        }
        if self.metrics_port is not None:
            args = (*args, "--metrics-port", str(self.metrics_port))
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [*self._resolver_prefix(), sys.executable, "-m", "keycloak_operator.cli", "run", *args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        time.sleep(0.5)
        if self.proc.poll() is not None:
            raise RuntimeError(f"operator exited at once:\n{self.tail()}")

    def _resolver_prefix(self) -> list[str]:
        if self.cluster_dns is None:
            return []
        resolv = self.log_dir / "resolv.conf"
        resolv.write_text(
            f"nameserver {self.cluster_dns}\nsearch svc.cluster.local cluster.local\noptions ndots:5\n"
        )
        # unshare execs (no fork): the pid is the operator's, so kill() and stop() reach it as before.
        mount = 'mount --bind "$0" /etc/resolv.conf && exec "$@"'
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, str(resolv)]

    def kill(self) -> None:
        """SIGKILL: the operator gets no chance to clean up, as in a node failure."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def peak_rss_bytes(self) -> int:
        """The process's peak resident memory so far (VmHWM in /proc/<pid>/status), while it runs."""
        assert self.proc is not None and self.alive()
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024  # kB
        raise AssertionError("no VmHWM in /proc/<pid>/status")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        """Everything this process logged (this start only)."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"
