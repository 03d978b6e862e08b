"""`localcluster.image_build`, the Python half of hack/build-*-image.sh: a prepared directory becomes a layer
with its owners and modes as the script set them, and layers plus a config become an image whose blobs,
digests and names agree."""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
from pathlib import Path

import pytest

from localcluster import image_build, oci


def _stage(root: Path) -> Path:
    """A miniature of what build-keycloak-image.sh stages: /opt/keycloak owned 1000:0 and group-writable."""
    home = root / "opt" / "keycloak"
    (home / "bin").mkdir(parents=True)
    (home / "data").mkdir()
    (home / "bin" / "kc.sh").write_text("#!/bin/sh\n")
    (home / "bin" / "kc.sh").chmod(0o775)
    (home / "version.txt").write_text("26.7.3\n")
    (home / "version.txt").chmod(0o664)
    for path in [home, *home.rglob("*")]:
        os.chown(path, 1000, 0, follow_symlinks=False)
    return root


def _blob(archive: Path, digest: str) -> bytes:
    with tarfile.open(archive) as tar:
        f = tar.extractfile("blobs/sha256/" + digest.split(":", 1)[1])
        assert f is not None
        return f.read()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to uid 1000 needs root")
def test_layer_keeps_the_owners_and_modes_the_script_set(tmp_path: Path) -> None:
    root = _stage(tmp_path / "stage")
    assert image_build.main(["layer", str(root), str(tmp_path / "layer.tar")]) == 0
    with tarfile.open(tmp_path / "layer.tar") as tar:
        members = {m.name: m for m in tar.getmembers()}
    kc = members["opt/keycloak/bin/kc.sh"]
    assert (kc.uid, kc.gid, kc.mode) == (1000, 0, 0o775)
    assert members["opt/keycloak/version.txt"].mode == 0o664
    assert members["opt/keycloak/data"].isdir() and members["opt/keycloak/data"].uid == 1000
    # The directory handed to the script is "/": it is not an entry, its children are top-level names.
    assert "opt" in members and not any(name.startswith(("/", "./")) for name in members)


def test_image_command_writes_an_archive_whose_config_is_the_one_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "base.tar"
    base.write_bytes(oci.layer({"etc/passwd": oci.File(b"keycloak:x:1000:0::/opt/keycloak:/sbin/nologin\n")}))
    top = tmp_path / "top.tar"
    top.write_bytes(oci.layer({"opt/keycloak/bin/kc.sh": oci.File.executable(b"#!/bin/sh\n", uid=1000)}))
    runtime = {
        "Entrypoint": ["/opt/keycloak/bin/kc.sh"],
        "User": "1000",
        "WorkingDir": "/opt/keycloak",
        "Env": ["LANG=en_US.UTF-8", "KC_RUN_IN_CONTAINER=true"],
    }
    (tmp_path / "config.json").write_text(json.dumps(runtime))
    archive = tmp_path / "kc.tar"
    ref = "quay.io/keycloak/keycloak:26.7.3"
    argv = ["image", str(archive), ref, str(tmp_path / "config.json"), str(base), str(top)]
    assert image_build.main(argv) == 0
    digest = capsys.readouterr().out.strip()

    manifest = json.loads(_blob(archive, digest))
    assert hashlib.sha256(_blob(archive, digest)).hexdigest() == digest.split(":", 1)[1]
    # Bottom layer first, each blob under the digest of its own bytes.
    layer_digests = [layer["digest"] for layer in manifest["layers"]]
    assert layer_digests == ["sha256:" + hashlib.sha256(p.read_bytes()).hexdigest() for p in (base, top)]
    config = json.loads(_blob(archive, manifest["config"]["digest"]))
    assert config["config"] == runtime
    assert config["rootfs"] == {"type": "layers", "diff_ids": layer_digests}
    with tarfile.open(archive) as tar:
        index = json.load(tar.extractfile("index.json"))  # type: ignore[arg-type]
    assert index["manifests"][0]["annotations"][oci.ANNOTATION_CONTAINERD_NAME] == ref

    # Same inputs, same bytes: a rebuilt archive keeps its digest, so nothing downstream sees a change.
    again = tmp_path / "again.tar"
    assert image_build.main(["image", str(again), ref, *argv[3:]]) == 0
    assert capsys.readouterr().out.strip() == digest
    assert again.read_bytes() == archive.read_bytes()


def test_image_command_refuses_a_config_that_is_not_an_object(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("[]")
    layer = tmp_path / "l.tar"
    layer.write_bytes(oci.layer({}))
    with pytest.raises(SystemExit):
        image_build.main(
            ["image", str(tmp_path / "x.tar"), "a/b:1", str(tmp_path / "config.json"), str(layer)]
        )
