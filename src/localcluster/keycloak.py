"""The real Keycloak server as a local process, for integration tests.

The distribution comes from Maven Central through hack/fetch-keycloak.sh. Every instance runs from its own
light home directory (a few copied files plus symlinks to the shared jars), because kc.sh re-augments into
`lib/quarkus/` and writes `data/` under its home: two instances sharing one home would race on both.
Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Literal

KEYCLOAK_VERSION = "26.7.3"

_REPO_ROOT = Path(__file__).resolve().parents[2]
FETCH_SCRIPT = _REPO_ROOT / "hack" / "fetch-keycloak.sh"

Mode = Literal["start-dev", "start"]


class KeycloakError(RuntimeError):
    """Keycloak (or what it needs: the distribution, Java) is missing or did not start."""


def ensure_distribution(version: str = KEYCLOAK_VERSION) -> Path:
    """Download (once), verify and unpack the server distribution; returns its install dir."""
    proc = subprocess.run(
        ["bash", str(FETCH_SCRIPT), version], capture_output=True, text=True, check=False, timeout=1800
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise KeycloakError(f"fetch-keycloak.sh {version} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    home = Path(lines[-1])
    if not (home / "bin" / "kc.sh").is_file():
        raise KeycloakError(f"fetch-keycloak.sh printed {home}, which has no bin/kc.sh")
    return home


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port(low: int | None = None, high: int | None = None) -> int:
    """A TCP port free on 127.0.0.1: any (kernel-chosen), or the first free one in [low, high]."""
    if low is None or high is None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])
    return free_port_run(low, high, 1)


def free_port_run(low: int, high: int, length: int, *, twin_offset: int = 0) -> int:
    """The first port p in [low, high] with p .. p+length-1 free on 127.0.0.1, and p+twin_offset onwards too
    when twin_offset is set (JGroups' FD_SOCK2 listens at the transport port + 50000)."""
    # Start at a random point so parallel callers rarely pick the same port.
    start = low + secrets.randbelow(high - low + 1)
    for i in range(high - low + 1):
        port = low + (start - low + i) % (high - low + 1)
        wanted = [port + k for k in range(length)]
        if twin_offset:
            wanted += [p + twin_offset for p in wanted]
        if all(p <= 65535 and _bindable(p) for p in wanted):
            return port
    raise KeycloakError(f"no {length} free port(s) in [{low}, {high}]")


def java_executable() -> str:
    """The java kc.sh will use (JAVA_HOME first, like kc.sh itself)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home) / "bin" / "java", os.X_OK):
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise KeycloakError("no java on PATH and no JAVA_HOME: install a JDK 17, 21 or 25")
    return found


# Build-time options of 26.7 (`kc.sh build --help-all`); changing one makes kc.sh re-augment (~40 s).
# Keycloak compares them itself, so an incomplete list only costs time, never correctness.
_BUILD_OPTIONS = (
    "db", "db-driver", "db-kind-", "transaction-xa-enabled", "feature-", "features", "features-disabled",
    "http-relative-path", "https-client-auth", "health-enabled", "http-management-health-enabled",
    "http-management-relative-path", "https-management-client-auth", "legacy-observability-interface",
    "metrics-enabled", "vault", "log-mdc-enabled", "telemetry-", "tracing-", "event-metrics-user-enabled",
    "fips-mode", "openapi-",
)  # fmt: skip


def _is_build_option(name: str) -> bool:
    if name.startswith("spi-") and name.endswith("-provider"):
        return True
    return any(name == o or (o.endswith("-") and name.startswith(o)) for o in _BUILD_OPTIONS)


def build_key(version: str, mode: str, args: Sequence[str], env: Mapping[str, str]) -> str:
    """Names the augmentation (lib/quarkus) these settings produce, so later instances can reuse it."""
    opts: dict[str, str] = {}
    for name, value in env.items():
        if name.startswith("KC_"):
            opts[name[3:].lower().replace("__", "--").replace("_", "-")] = value
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if not eq and i + 1 < len(args) and not args[i + 1].startswith("--"):
                value = args[i + 1]
            opts[name] = value
    picked = sorted((k, v) for k, v in opts.items() if _is_build_option(k))
    return hashlib.sha256(json.dumps([version, mode, picked]).encode()).hexdigest()[:16]


def _prepare_home(distribution: Path, home: Path, augmented: Path | None) -> None:
    # kc.sh resolves its own symlinks to find its home, so it and the parts it writes are real copies.
    (home / "bin").mkdir(parents=True)
    shutil.copy2(distribution / "bin" / "kc.sh", home / "bin" / "kc.sh")
    shutil.copytree(distribution / "conf", home / "conf")
    quarkus = augmented if augmented and augmented.is_dir() else distribution / "lib" / "quarkus"
    shutil.copytree(quarkus, home / "lib" / "quarkus")
    shutil.copy2(distribution / "lib" / "quarkus-run.jar", home / "lib" / "quarkus-run.jar")
    for shared in ("lib/lib", "lib/app", "themes", "version.txt"):
        (home / shared).symlink_to(distribution / shared)
    (home / "providers").mkdir()


class KeycloakProcess:
    """One Keycloak server; `start()` returns once /health/ready on the management port says UP."""

    def __init__(
        self,
        *,
        version: str = KEYCLOAK_VERSION,
        distribution: Path | None = None,
        mode: Mode = "start-dev",
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        admin_username: str = "admin",
        admin_password: str | None = None,
        work_dir: Path | None = None,
        startup_timeout: float = 180.0,
        quick_jvm: bool = True,
        management_ca: Path | None = None,
    ) -> None:
        """`management_ca`: the management interface serves HTTPS (it inherits the server's TLS), with a
        certificate this CA signed; readiness is then checked over HTTPS against it."""
        self.version = version
        self.distribution = distribution
        self.mode: Mode = mode
        self.extra_args = list(args)
        self.extra_env = dict(env or {})
        self.admin_username = admin_username
        self.admin_password = admin_password or secrets.token_urlsafe(18)
        self.startup_timeout = startup_timeout
        self.quick_jvm = quick_jvm
        self._own_work_dir = work_dir is None
        self.work_dir = work_dir or Path(tempfile.mkdtemp(prefix="kcop-keycloak-"))
        self.home = self.work_dir / "home"
        self.log_path = self.work_dir / "keycloak.log"
        self.http_port = free_port()
        self.management_port = free_port()
        self.startup_seconds: float | None = None
        self.management_ca = management_ca
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def management_url(self) -> str:
        scheme = "https" if self.management_ca else "http"
        return f"{scheme}://127.0.0.1:{self.management_port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        args = [
            str(self.home / "bin" / "kc.sh"),
            self.mode,
            "--http-host=127.0.0.1",
            f"--http-port={self.http_port}",
            "--http-management-host=127.0.0.1",
            f"--http-management-port={self.management_port}",
            "--health-enabled=true",
        ]
        if self.mode == "start":
            # Production mode refuses plain HTTP and a dynamic hostname unless told; tests need both (unless
            # a test sets them itself, as the operator's rendered TLS and hostname settings do: a command-line
            # option would win over the variable under test).
            if "KC_HOSTNAME_STRICT" not in self.extra_env:
                args += ["--hostname-strict=false"]
            if "KC_HTTP_ENABLED" not in self.extra_env:
                args += ["--http-enabled=true"]
        return args + self.extra_args

    def environment(self) -> dict[str, str]:
        # Inherited KC_* settings would make instances differ from what the test asked for.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KC_", "JAVA_OPTS"))}
        env["JAVA_HOME"] = str(Path(java_executable()).resolve().parents[1])
        env["KC_BOOTSTRAP_ADMIN_USERNAME"] = self.admin_username
        env["KC_BOOTSTRAP_ADMIN_PASSWORD"] = self.admin_password
        env.update(self.extra_env)
        if self.quick_jvm:
            # C1 only: about half the CPU time to boot on two cores; tests never run long enough to miss C2.
            env["JAVA_OPTS_APPEND"] = f"-XX:TieredStopAtLevel=1 {env.get('JAVA_OPTS_APPEND', '')}".strip()
        return env

    def start(self) -> KeycloakProcess:
        if self._proc is not None:
            raise KeycloakError("already started")
        env = self.environment()  # fails early when Java is missing
        distribution = self.distribution or ensure_distribution(self.version)
        key = build_key(self.version, self.mode, self.command()[1:], env)
        augmented = distribution.parent / f"augmented-{distribution.name}" / key
        if not self.home.exists():  # a restart keeps its home, and so its data
            _prepare_home(distribution, self.home, augmented)
        began = time.monotonic()
        with open(self.log_path, "wb") as log:
            # Own session: stop() signals the whole process group, never anything it did not start.
            self._proc = subprocess.Popen(
                self.command(),
                cwd=self.work_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self._wait_ready(began + self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began
        self._save_augmentation(augmented)
        return self

    def _save_augmentation(self, target: Path) -> None:
        # Copy then rename, so a concurrent reader never sees half of it; losing a race is fine.
        if target.exists():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
        try:
            shutil.copytree(self.home / "lib" / "quarkus", tmp / "quarkus")
            with contextlib.suppress(OSError):
                (tmp / "quarkus").rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _wait_ready(self, deadline: float) -> None:
        assert self._proc is not None
        url = f"{self.management_url}/health/ready"
        while True:
            code = self._proc.poll()
            if code is not None:
                raise KeycloakError(f"Keycloak exited with {code} while starting:\n{self.log_tail()}")
            if _is_up(url, self.management_ca):
                return
            if time.monotonic() > deadline:
                raise KeycloakError(
                    f"Keycloak not ready at {url} after {self.startup_timeout:.0f}s:\n{self.log_tail()}"
                )
            time.sleep(0.5)

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        # Java stack frames would push the actual ERROR lines out of the tail.
        kept = [ln for ln in self.log_text().splitlines() if not ln.lstrip().startswith(("at ", "... "))]
        return "\n".join(kept[-lines:])

    def wait_for_log(self, needle: str | re.Pattern[str], timeout: float = 60.0) -> str:
        """Waits until a log line contains `needle` (or matches it, a compiled pattern); returns that line."""
        deadline = time.monotonic() + timeout
        while True:
            for line in self.log_text().splitlines():
                if needle.search(line) if isinstance(needle, re.Pattern) else needle in line:
                    return line
            if time.monotonic() > deadline:
                raise KeycloakError(f"no log line with {needle!r} after {timeout:.0f}s:\n{self.log_tail()}")
            time.sleep(0.5)

    def stop(self, timeout: float = 30.0) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)

    def cleanup(self) -> None:
        """Stops the server and removes its work dir (log included) if this object created it."""
        self.stop()
        if self._own_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> KeycloakProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cleanup()


def _is_up(url: str, ca: Path | None = None) -> bool:
    context = ssl.create_default_context(cafile=str(ca)) if ca else None
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as resp:
            return resp.status == 200 and json.loads(resp.read()).get("status") == "UP"
    except (urllib.error.URLError, OSError, ValueError):
        return False
