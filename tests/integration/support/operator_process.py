"""Runs the operator as a real process on the local control plane, so tests can SIGKILL and restart it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


class OperatorProcess:
    def __init__(self, kubeconfig: Path, log_dir: Path, *, resync_seconds: float = 5.0, extra_env=None):
        self.kubeconfig = kubeconfig
        self.log_dir = log_dir
        self.resync_seconds = resync_seconds
        self.extra_env = dict(extra_env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"operator-{self.starts}.log"

    def start(self, *args: str, env: dict[str, str] | None = None) -> None:
        """`env` adds variables for this start only (a failpoint, say)."""
        self.starts += 1
        env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "KCOP_RESYNC_SECONDS": str(self.resync_seconds),
            **self.extra_env,
            **(env or {}),
        }
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "keycloak_operator.cli", "run", *args],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        time.sleep(0.5)
        if self.proc.poll() is not None:
            raise RuntimeError(f"operator exited at once:\n{self.tail()}")

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
