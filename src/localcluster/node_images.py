"""The real node's own images (pause, CoreDNS, netcheck): one static binary each, written with `oci`, then
imported into the node's containerd. Nothing can be pulled here, so these are all the node has to start with.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localcluster import oci, versions
from localcluster.node_config import NETCHECK_IMAGE, PAUSE_IMAGE, coredns_image

CRI_NAMESPACE = "k8s.io"  # the containerd namespace the CRI plugin (so the kubelet) sees


@dataclass(frozen=True)
class ImageSpec:
    ref: str
    binary: str  # in the node's bin dir; placed at /<binary> in the image
    runtime: dict[str, Any]


def specs() -> list[ImageSpec]:
    return [
        # 65535 as upstream's pause: the sandbox process needs no privileges at all.
        ImageSpec(PAUSE_IMAGE, "pause", {"Entrypoint": ["/pause"], "User": "65535:65535"}),
        # Root: it binds port 53 on the node's address (host network).
        ImageSpec(coredns_image(versions.COREDNS_VERSION), "coredns", {"Entrypoint": ["/coredns"]}),
        ImageSpec(
            NETCHECK_IMAGE,
            "netcheck",
            {"Entrypoint": ["/netcheck"], "User": "65534:65534", "ExposedPorts": {"8080/tcp": {}}},
        ),
    ]


def archive(spec: ImageSpec, bin_dir: Path, out_dir: Path) -> tuple[Path, str]:
    """The image's archive and manifest digest, rewritten only when its binary is newer."""
    binary = bin_dir / spec.binary
    path = out_dir / f"{spec.binary}.oci.tar"
    digest_file = path.with_name(path.name + ".digest")
    if path.exists() and digest_file.exists() and path.stat().st_mtime >= binary.stat().st_mtime:
        return path, digest_file.read_text().strip()
    files = {
        spec.binary: oci.File.executable(binary.read_bytes()),
        # /etc/passwd and /tmp are what a static binary might touch; the rest of the root is the runtime's.
        "etc/passwd": oci.File(
            b"root:x:0:0:root:/:/sbin/nologin\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n"
        ),
        "etc/group": oci.File(b"root:x:0:\nnogroup:x:65534:\n"),
        "tmp": oci.File.directory(0o1777),
    }
    digest = oci.write_image(path, [oci.layer(files)], spec.runtime, spec.ref)
    digest_file.write_text(digest + "\n")
    return path, digest


def sync(socket: Path, bin_dir: Path, out_dir: Path) -> list[str]:
    """Imports every node image containerd lacks or holds in another version; returns those imported.

    Run on every start and every reuse, so a rebuilt binary reaches the node without restarting it (pods
    already running keep the image they started with).
    """
    have = present(socket)
    imported = []
    for spec in specs():
        path, digest = archive(spec, bin_dir, out_dir)
        if have.get(spec.ref) != digest:
            import_archive(socket, path)
            imported.append(spec.ref)
    return imported


def ctr(socket: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ctr", f"--address={socket}", f"--namespace={CRI_NAMESPACE}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class ImageImportError(RuntimeError):
    """`ctr images import` refused an archive."""


def import_archive(socket: Path, path: Path) -> None:
    # Unpacked into the CRI's snapshotter at import, so the first container does not wait for it.
    proc = ctr(socket, "images", "import", "--snapshotter=overlayfs", str(path))
    if proc.returncode != 0:
        raise ImageImportError(
            f"ctr images import {path} failed: {proc.stderr.strip() or proc.stdout.strip()}"
        )


def present(socket: Path) -> dict[str, str]:
    """{reference: manifest digest} of the images in the CRI's namespace."""
    proc = ctr(socket, "images", "ls")
    rows = [line.split() for line in proc.stdout.splitlines()[1:]] if proc.returncode == 0 else []
    return {row[0]: row[2] for row in rows if len(row) > 2}
