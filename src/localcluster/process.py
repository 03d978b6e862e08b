"""Detached child processes that outlive their starter, recorded and stopped only by their own pid."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

TAIL_LINES = 40


def free_port() -> int:
    """A TCP port the kernel considers free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(argv: Sequence[str], log: Path, cwd: Path, env: Mapping[str, str] | None = None) -> int:
    """Starts argv in its own session (so `make cluster` can return and Ctrl-C does not reach it), with
    `env` when given (else this process's environment)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
            env=dict(env) if env is not None else None,
        )
    return proc.pid


def alive(pid: int) -> bool:
    """True while pid runs. A zombie child (possible while its starter lives) counts as dead."""
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        waited = 0  # not our child: fall through to the signal probe
    else:
        if waited == pid:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] == "Z"
    return False


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def is_ours(pid: int, executable: Path) -> bool:
    """Guards against pid reuse: only signal a pid still running the binary we started."""
    argv = cmdline(pid)
    return bool(argv) and argv[0] == str(executable)


def terminate(pid: int, executable: Path, grace: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after the grace period; a pid now running something else is left alone."""
    if not alive(pid) or not is_ours(pid, executable):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not alive(pid):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def tail(log: Path, lines: int = TAIL_LINES) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return f"(no log at {log})"
    return "\n".join(text.splitlines()[-lines:])


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Holds an exclusive flock on `path` (made if missing): one start or stop of a component set at a time,
    across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
