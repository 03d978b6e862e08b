"""An image registry for the real node: Debian's distribution registry (`docker-registry`, 2.8), serving
plain HTTP on 127.0.0.1 only, its storage under the cluster's state dir.

The real node's containerd (1.6) pulls from a registry on a loopback host over plain HTTP with no
configuration (its CRI plugin's default scheme for `localhost` and loopback addresses is http), so an image
pushed here as `127.0.0.1:<port>/<name>:<tag>` is pulled as any registry's would be: the kubelet's `Always`
for `:latest` works, and the container status names the registry's manifest digest (`imageID` is
`127.0.0.1:<port>/<name>@sha256:...`), which the operator's preflight pins. Images reach it with
`skopeo copy` from the OCI archives the hack/ scripts build.

A stage of the cluster of its own, added to a running cluster as to a new one: started when missing or
dead, reused while it answers, stopped by its recorded pid (ADR 0029). Both programs come from Debian
(`make host-packages`), none is built.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from localcluster import http, process
from localcluster.control_plane import ComponentError
from localcluster.state import Component

NAME = "registry"
START_TIMEOUT = 30.0
PUSH_TIMEOUT = 600.0  # a Keycloak image is half a gigabyte
BINARY = Path("/usr/bin/docker-registry")  # Debian's docker-registry package
SKOPEO = Path("/usr/bin/skopeo")  # Debian's skopeo package


class MissingPackageError(RuntimeError):
    """A program of the registry stage is not installed; the message names the Debian package."""


@dataclass(frozen=True)
class Registry:
    host: str  # 127.0.0.1:<port>: what image references name
    root: Path

    def ref(self, repository: str, tag: str) -> str:
        return f"{self.host}/{repository}:{tag}"

    def digest(self, repository: str, tag: str) -> str:
        """The manifest digest the registry serves for repository:tag (its Docker-Content-Digest), asked as
        a client would; "" when it has no such tag."""
        request = urllib.request.Request(
            f"http://{self.host}/v2/{repository}/manifests/{tag}",
            method="HEAD",
            headers={"Accept": ", ".join(MANIFEST_TYPES)},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                return str(resp.headers.get("Docker-Content-Digest") or "")
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return ""
            raise

    def push(self, archive: Path, ref: str) -> None:
        """Pushes the single image of an OCI archive (index.json, blobs/) as `ref`, manifest bytes unchanged,
        so the registry serves the archive's own manifest digest."""
        _require(SKOPEO, "skopeo")
        # Extracted under the registry's own dir rather than left to skopeo's `oci-archive:`, which unpacks
        # the half gigabyte into /var/tmp (and took longer: 3.2 s against 2.4 s for the Keycloak image).
        with tempfile.TemporaryDirectory(dir=self.root, prefix="push-") as layout:
            with tarfile.open(archive) as tar:
                tar.extractall(layout, filter="data")
            proc = subprocess.run(
                push_argv(Path(layout), ref),
                capture_output=True,
                text=True,
                timeout=PUSH_TIMEOUT,
                check=False,
            )
        if proc.returncode != 0:
            tail = proc.stderr[-2000:]
            raise RuntimeError(f"skopeo copy {archive} {ref} failed ({proc.returncode}): {tail}")


def push_argv(layout: Path, ref: str) -> list[str]:
    """skopeo's copy of the one image of the OCI layout `layout` to `ref` on the loopback registry, its
    manifest bytes unchanged: `--preserve-digests` fails rather than rewrite the manifest (a conversion
    would change the digest the node reports). The registry speaks plain HTTP, which skopeo refuses
    ("server gave HTTP response to HTTPS client") unless TLS verification is off for the destination.
    `--insecure-policy`: our own image, just built, carries no signature, and a machine's
    /etc/containers/policy.json that asks for one must not fail the push."""
    return [
        str(SKOPEO),
        "--insecure-policy",
        "copy",
        "--quiet",
        "--preserve-digests",
        "--dest-tls-verify=false",
        f"oci:{layout}",
        f"docker://{ref}",
    ]


def serve_argv(binary: Path, config: Path) -> list[str]:
    return [str(binary), "serve", str(config)]


def _require(program: Path, package: str) -> None:
    if not program.is_file():
        raise MissingPackageError(
            f"{program} is missing; run `make host-packages` (Debian package {package})"
        )


MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)


@dataclass
class RegistryState:
    port: int
    component: Component

    def save(self, root: Path) -> None:
        tmp = root / "registry.json.tmp"
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(root / "registry.json")


def load(root: Path) -> RegistryState | None:
    try:
        raw = json.loads((root / "registry.json").read_text())
        return RegistryState(port=int(raw["port"]), component=Component(**raw["component"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def config_text(storage: Path, port: int) -> str:
    """The registry's configuration: files under `storage`, HTTP on loopback only, deletes allowed (so a
    test can drop what it pushed). JSON is YAML, and needs no quoting rules of its own."""
    config = {
        "version": 0.1,
        "log": {"level": "info"},
        "storage": {"filesystem": {"rootdirectory": str(storage)}, "delete": {"enabled": True}},
        "http": {"addr": f"127.0.0.1:{port}"},
    }
    return json.dumps(config, indent=2) + "\n"


def _answers(host: str) -> bool:
    return http.get(f"http://{host}/v2/", timeout=2)[0] == 200


def _running(state: RegistryState, binary: Path) -> bool:
    c = state.component
    return (
        Path(c.executable) == binary
        and process.alive(c.pid)
        and process.is_ours(c.pid, binary)
        and _answers(f"127.0.0.1:{state.port}")
    )


def _port(previous: int | None) -> int:
    """The port it had, while free: the references the node holds name it, and the same bits under a second
    name would be a second repository to the node (a digest reported under either). Else a free one."""
    if previous:
        with socket.socket() as s:
            # As Go's listener does: the old process's connections in TIME_WAIT do not hold the port.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", previous))
            except OSError:
                return process.free_port()
            return previous
    return process.free_port()


def registry_environment(inherited: Mapping[str, str]) -> dict[str, str]:
    """The registry's environment: this one without what would override its configuration. Distribution
    reads any `REGISTRY_*` variable over the config file (2.8 does: `REGISTRY_HTTP_ADDR=:5000`, a leftover
    of `docker run registry`, would listen on every interface). 2.8 has no trace export; distribution 3's
    is on by default, sending request spans to localhost:4318 or an inherited `OTEL_*` endpoint, so the
    `OTEL_*` rule stays for the day Debian ships 3."""
    kept = {k: v for k, v in inherited.items() if not k.startswith(("REGISTRY_", "OTEL_"))}
    return {**kept, "OTEL_TRACES_EXPORTER": "none", "OTEL_SDK_DISABLED": "true"}


def _start(root: Path, binary: Path, log: Path, previous: int | None) -> RegistryState:
    port = _port(previous)
    config = root / "config.json"
    config.write_text(config_text(root / "storage", port))
    argv = serve_argv(binary, config)
    pid = process.spawn(argv, log, cwd=root, env=registry_environment(os.environ))
    state = RegistryState(port, Component(NAME, pid, argv[0], str(log)))
    state.save(root)  # recorded before waiting, so a stop finds it even if it never answers
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if not process.alive(state.component.pid):
            raise ComponentError(NAME, "the process exited", log)
        if _answers(f"127.0.0.1:{port}"):
            return state
        time.sleep(0.2)
    process.terminate(state.component.pid, binary)
    raise ComponentError(NAME, f"not answering GET /v2/ after {START_TIMEOUT:.0f}s", log)


def ensure_running(state_dir: Path, log: Path) -> Registry:
    """The registry of the cluster in `state_dir`: reused while it answers, else (re)started. What it stored
    survives a restart, and so does its port unless another process took it. A registry recorded with
    another binary (the Go-built one before ADR 0029's change) is stopped and replaced."""
    binary = BINARY
    _require(binary, "docker-registry")
    root = state_dir / NAME
    root.mkdir(parents=True, exist_ok=True)
    with process.exclusive(state_dir / f".{NAME}.lock"):
        state = load(root)
        if state is None or not _running(state, binary):
            if state is not None:
                process.terminate(state.component.pid, Path(state.component.executable))
            state = _start(root, binary, log, state.port if state is not None else None)
        return Registry(f"127.0.0.1:{state.port}", root)


def current(state_dir: Path) -> Registry | None:
    """The cluster's registry if it is recorded and answers, without starting anything."""
    state = load(state_dir / NAME)
    if state is None or not _answers(f"127.0.0.1:{state.port}"):
        return None
    return Registry(f"127.0.0.1:{state.port}", state_dir / NAME)


def stop(state_dir: Path) -> bool:
    """Stops the registry of the cluster in `state_dir` by its pid; False if none was recorded. Its files go
    with the state dir."""
    root = state_dir / NAME
    if not (root / "registry.json").exists():
        return False  # checked before locking: the lock file would create the state dir
    with process.exclusive(state_dir / f".{NAME}.lock"):
        state = load(root)
        if state is None:
            return False
        process.terminate(state.component.pid, Path(state.component.executable))
        (root / "registry.json").unlink(missing_ok=True)
        return True
