"""Writes container images as OCI image-layout tar archives, without a container engine or a registry.

Nothing can be pulled on this machine, so every image the real node runs is assembled here and imported with
`ctr images import`. The archive is an OCI image layout (`oci-layout`, `index.json`, `blobs/sha256/...`) plus
Docker's `manifest.json`, so `docker load` and `podman load` read the same file. Everything is deterministic
(sorted entries, fixed timestamps and owners unless given, no compression): the same inputs give the same
bytes and digests, which keeps cached images valid and lets tests compare digests.

Layers are uncompressed tars: a local import gains nothing from gzip but pays its CPU time on two cores.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tarfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar"
# containerd names an imported image from this annotation; the OCI one holds only the tag.
ANNOTATION_CONTAINERD_NAME = "io.containerd.image.name"
ANNOTATION_REF_NAME = "org.opencontainers.image.ref.name"

EPOCH = 0  # every mtime in a layer: content alone decides the digest
_CHUNK = 1 << 20


@dataclass(frozen=True)
class File:
    """One entry of a layer built in memory. `data` None with a mode of a directory makes a directory."""

    data: bytes | None = b""
    mode: int = 0o644
    uid: int = 0
    gid: int = 0
    link: str | None = None  # a symlink's target; data is ignored then

    @staticmethod
    def directory(mode: int = 0o755, uid: int = 0, gid: int = 0) -> File:
        return File(None, mode, uid, gid)

    @staticmethod
    def executable(data: bytes, uid: int = 0, gid: int = 0) -> File:
        return File(data, 0o755, uid, gid)

    @staticmethod
    def symlink(target: str) -> File:
        return File(None, 0o777, link=target)


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _info(name: str, mode: int, uid: int, gid: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mode, info.uid, info.gid, info.mtime = mode, uid, gid, EPOCH
    info.uname = info.gname = ""  # owners by number only, as the runtime applies them
    return info


def layer(files: Mapping[str, File]) -> bytes:
    """An uncompressed layer tar from {path inside the image: File}; missing parent directories are added."""
    entries: dict[str, File] = {}
    for raw, spec in files.items():
        path = raw.strip("/")
        for parent in _parents(path):
            entries.setdefault(parent, File.directory())
        entries[path] = spec
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(entries):
            spec = entries[path]
            info = _info(path, spec.mode, spec.uid, spec.gid)
            if spec.link is not None:
                info.type, info.linkname = tarfile.SYMTYPE, spec.link
                tar.addfile(info)
            elif spec.data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(spec.data)
                tar.addfile(info, io.BytesIO(spec.data))
    return buf.getvalue()


def layer_from_dir(root: Path, out: Path) -> Path:
    """Streams a directory tree (e.g. a root filesystem) into an uncompressed layer tar at out.

    Keeps modes, numeric owners, symlinks and hard links (tarfile links a second path to the same inode);
    device nodes, sockets and fifos are left out (the runtime provides /dev). Entries are sorted and mtimes
    fixed, so the same tree gives the same digest.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in _walk(root):
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                continue
            info = tar.gettarinfo(str(path), arcname=rel)
            info.mtime, info.uname, info.gname = EPOCH, "", ""
            if info.isreg():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    tmp.replace(out)
    return out


def _walk(root: Path) -> Iterable[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()  # os.walk descends in this order, so the whole walk is sorted
        base = Path(dirpath)
        if base != root:
            yield base
        for name in sorted(filenames):
            yield base / name
        # Symlinks to directories are listed in dirnames but not descended into: add them as links.
        for name in dirnames:
            if (base / name).is_symlink():
                yield base / name


@dataclass(frozen=True)
class Blob:
    digest: str  # "sha256:<hex>"
    size: int

    @property
    def hex(self) -> str:
        return self.digest.split(":", 1)[1]


def _blob_of(source: Path | bytes) -> Blob:
    h, size = hashlib.sha256(), 0
    if isinstance(source, bytes):
        h.update(source)
        size = len(source)
    else:
        with source.open("rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
                size += len(chunk)
    return Blob(f"sha256:{h.hexdigest()}", size)


def _json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = _info(name, 0o644, 0, 0)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def _add_source(tar: tarfile.TarFile, name: str, source: Path | bytes, size: int) -> None:
    info = _info(name, 0o644, 0, 0)
    info.size = size
    if isinstance(source, bytes):
        tar.addfile(info, io.BytesIO(source))
    else:
        with source.open("rb") as f:
            tar.addfile(info, f)


def split_ref(ref: str) -> tuple[str, str]:
    """('registry/repo', 'tag') of a reference that must carry an explicit tag (no digests: built here)."""
    name, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag or not name or "@" in ref:
        raise ValueError(f"image reference needs an explicit tag: {ref!r}")
    return name, tag


def image_config(runtime: Mapping[str, Any], diff_ids: Sequence[str], arch: str = "amd64") -> dict[str, Any]:
    """The OCI image config: runtime settings (Entrypoint, Cmd, Env, User, WorkingDir, ...) plus layers."""
    return {
        "architecture": arch,
        "os": "linux",
        "config": dict(runtime),
        "rootfs": {"type": "layers", "diff_ids": list(diff_ids)},
        # A fixed creation time (the epoch) so the config digest, and so the image id, is reproducible.
        "created": "1970-01-01T00:00:00Z",
    }


def write_image(
    path: Path, layers: Sequence[Path | bytes], config: Mapping[str, Any], ref: str, arch: str = "amd64"
) -> str:
    """Writes one image as an OCI-layout tar (plus Docker's manifest.json); returns its manifest digest.

    `layers` are uncompressed tars, bottom first, as bytes or files (see `layer`, `layer_from_dir`);
    `config` is the runtime part of the image config (`Entrypoint`, `Cmd`, `Env`, `User`, `WorkingDir`,
    `ExposedPorts`, `Labels`); `ref` the full name with a tag, e.g. `quay.io/keycloak/keycloak:26.7.0`.
    """
    _, tag = split_ref(ref)
    layer_blobs = [_blob_of(source) for source in layers]
    # Uncompressed layers: each diff_id (digest of the uncompressed tar) is its blob digest.
    config_bytes = _json(image_config(config, [b.digest for b in layer_blobs], arch))
    config_blob = _blob_of(config_bytes)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": {"mediaType": MEDIA_CONFIG, "digest": config_blob.digest, "size": config_blob.size},
        "layers": [{"mediaType": MEDIA_LAYER, "digest": b.digest, "size": b.size} for b in layer_blobs],
    }
    manifest_bytes = _json(manifest)
    manifest_blob = _blob_of(manifest_bytes)
    index = {
        "schemaVersion": 2,
        "mediaType": MEDIA_INDEX,
        "manifests": [
            {
                "mediaType": MEDIA_MANIFEST,
                "digest": manifest_blob.digest,
                "size": manifest_blob.size,
                "platform": {"architecture": arch, "os": "linux"},
                "annotations": {ANNOTATION_CONTAINERD_NAME: ref, ANNOTATION_REF_NAME: tag},
            }
        ],
    }
    docker_manifest = [
        {
            "Config": f"blobs/sha256/{config_blob.hex}",
            "RepoTags": [ref],
            "Layers": [f"blobs/sha256/{b.hex}" for b in layer_blobs],
        }
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add_bytes(tar, "oci-layout", _json({"imageLayoutVersion": "1.0.0"}))
        _add_bytes(tar, "index.json", _json(index))
        _add_bytes(tar, "manifest.json", _json(docker_manifest))
        tar.addfile(_dir_info("blobs"))
        tar.addfile(_dir_info("blobs/sha256"))
        written = set()
        for source, blob in [(config_bytes, config_blob), *zip(layers, layer_blobs, strict=True)]:
            if blob.digest in written:
                continue  # two identical layers are stored once
            written.add(blob.digest)
            _add_source(tar, f"blobs/sha256/{blob.hex}", source, blob.size)
        _add_bytes(tar, f"blobs/sha256/{manifest_blob.hex}", manifest_bytes)
    tmp.replace(path)  # a reader never sees half an archive
    return manifest_blob.digest


def _dir_info(name: str) -> tarfile.TarInfo:
    info = _info(name, 0o755, 0, 0)
    info.type = tarfile.DIRTYPE
    return info
