"""The OCI image writer: deterministic bytes, digests that match content, a layout containerd can import."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

import pytest

from localcluster import oci


def _members(data: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: m for m in tar.getmembers()}


def _read(archive: Path, name: str) -> bytes:
    with tarfile.open(archive) as tar:
        f = tar.extractfile(name)
        assert f is not None
        return f.read()


def test_layer_is_deterministic_sorted_and_adds_parents() -> None:
    files = {"usr/bin/tool": oci.File.executable(b"x"), "etc/passwd": oci.File(b"root:x:0:0::/:/bin/sh\n")}
    one, two = oci.layer(files), oci.layer(dict(reversed(list(files.items()))))
    assert one == two
    members = _members(one)
    assert list(members) == ["etc", "etc/passwd", "usr", "usr/bin", "usr/bin/tool"]
    assert members["usr/bin"].isdir()
    assert members["usr/bin/tool"].mode == 0o755
    assert all(m.mtime == oci.EPOCH and m.uname == "" for m in members.values())


def test_layer_keeps_owners_symlinks_and_directory_modes() -> None:
    members = _members(
        oci.layer(
            {
                "opt/app/data": oci.File(b"d", uid=1000, gid=1000),
                "opt/app/link": oci.File.symlink("data"),
                "tmp": oci.File.directory(0o1777),
            }
        )
    )
    assert (members["opt/app/data"].uid, members["opt/app/data"].gid) == (1000, 1000)
    assert members["opt/app/link"].issym() and members["opt/app/link"].linkname == "data"
    assert members["tmp"].mode == 0o1777


def test_layer_from_dir_is_reproducible_and_keeps_links(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "b").mkdir(parents=True)
    (root / "a.txt").write_text("a")
    (root / "b" / "run.sh").write_text("#!/bin/sh\n")
    (root / "b" / "run.sh").chmod(0o750)
    os.link(root / "a.txt", root / "b" / "hard.txt")
    (root / "b" / "sym").symlink_to("../a.txt")
    (root / "dirlink").symlink_to("b")
    first = oci.layer_from_dir(root, tmp_path / "one.tar").read_bytes()
    os.utime(root / "a.txt", (1e9, 1e9))  # a different mtime must not change the layer
    second = oci.layer_from_dir(root, tmp_path / "two.tar").read_bytes()
    assert first == second
    members = _members(first)
    assert members["b/run.sh"].mode == 0o750
    assert members["b/sym"].issym()
    assert members["dirlink"].issym() and members["dirlink"].linkname == "b"
    # The second path of one inode is a hard link to the first, not a second copy of the data.
    assert members["b/hard.txt"].islnk() or members["a.txt"].islnk()


def test_write_image_layout_digests_and_names(tmp_path: Path) -> None:
    layer = oci.layer({"hello": oci.File.executable(b"\x7fELF")})
    ref = "kcop.local/hello:1"
    digest = oci.write_image(tmp_path / "img.tar", [layer], {"Entrypoint": ["/hello"]}, ref)
    archive = tmp_path / "img.tar"
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    assert {"oci-layout", "index.json", "manifest.json"} <= names
    # Every blob is stored under its own sha256.
    for name in names:
        if name.startswith("blobs/sha256/") and name.count("/") == 2:
            assert hashlib.sha256(_read(archive, name)).hexdigest() == name.rsplit("/", 1)[1]
    index = json.loads(_read(archive, "index.json"))
    entry = index["manifests"][0]
    assert entry["digest"] == digest
    assert entry["annotations"][oci.ANNOTATION_CONTAINERD_NAME] == ref
    assert entry["annotations"][oci.ANNOTATION_REF_NAME] == "1"
    manifest = json.loads(_read(archive, f"blobs/sha256/{digest.split(':')[1]}"))
    layer_digest = "sha256:" + hashlib.sha256(layer).hexdigest()
    assert [entry["digest"] for entry in manifest["layers"]] == [layer_digest]
    config = json.loads(_read(archive, "blobs/sha256/" + manifest["config"]["digest"].split(":")[1]))
    assert config["rootfs"]["diff_ids"] == [layer_digest]  # uncompressed: diff_id == blob digest
    assert config["config"] == {"Entrypoint": ["/hello"]}
    assert (config["os"], config["architecture"]) == ("linux", "amd64")
    docker = json.loads(_read(archive, "manifest.json"))
    assert docker[0]["RepoTags"] == [ref]


def test_write_image_is_byte_identical_for_the_same_input(tmp_path: Path) -> None:
    layer_file = tmp_path / "layer.tar"
    layer_file.write_bytes(oci.layer({"a": oci.File(b"a")}))
    args = ({"Env": ["A=1"]}, "kcop.local/a:2")
    d1 = oci.write_image(tmp_path / "1.tar", [layer_file], *args)
    d2 = oci.write_image(tmp_path / "2.tar", [layer_file.read_bytes()], *args)
    assert d1 == d2
    assert (tmp_path / "1.tar").read_bytes() == (tmp_path / "2.tar").read_bytes()


def test_write_image_stores_a_repeated_layer_once(tmp_path: Path) -> None:
    layer = oci.layer({"a": oci.File(b"a")})
    oci.write_image(tmp_path / "img.tar", [layer, layer], {}, "kcop.local/a:1")
    with tarfile.open(tmp_path / "img.tar") as tar:
        blobs = [n for n in tar.getnames() if n.startswith("blobs/sha256/")]
    assert len(blobs) == len(set(blobs)) == 3  # one layer, the config, the manifest


@pytest.mark.parametrize("ref", ["kcop.local/a", "kcop.local/a@sha256:00", ":1", "host:5000/a"])
def test_a_reference_needs_an_explicit_tag(ref: str) -> None:
    with pytest.raises(ValueError, match="explicit tag"):
        oci.split_ref(ref)


def test_a_registry_port_is_not_a_tag() -> None:
    assert oci.split_ref("host:5000/repo/a:1.2") == ("host:5000/repo/a", "1.2")
