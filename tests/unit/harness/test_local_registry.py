"""The local cluster's registry stage without a registry: its configuration (loopback only, storage under
the cluster's state dir), its record on disk, the references it names, and the command lines it runs
(Debian's docker-registry, skopeo's push), with the processes replaced. Starting it, pushing to it and the
real node pulling from it are integration tests (test_local_registry, test_real_recreate)."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path
from typing import cast

import pytest
import yaml

from localcluster import registry
from localcluster.state import Component


def test_the_registry_listens_on_loopback_only_and_stores_under_the_given_dir(tmp_path: Path) -> None:
    config = yaml.safe_load(registry.config_text(tmp_path / "storage", 5123))
    assert config["version"] == 0.1
    assert config["http"] == {"addr": "127.0.0.1:5123"}
    assert config["storage"]["filesystem"] == {"rootdirectory": str(tmp_path / "storage")}
    assert config["storage"]["delete"] == {"enabled": True}


def test_the_record_survives_a_round_trip_and_a_torn_one_reads_as_none(tmp_path: Path) -> None:
    state = registry.RegistryState(5123, Component("registry", 42, "/cache/registry", "/logs/registry.log"))
    state.save(tmp_path)
    assert registry.load(tmp_path) == state
    (tmp_path / "registry.json").write_text('{"port": 5123')
    assert registry.load(tmp_path) is None
    assert registry.load(tmp_path / "missing") is None


def test_references_name_the_loopback_host_and_port(tmp_path: Path) -> None:
    served = registry.Registry("127.0.0.1:5123", tmp_path)
    assert served.ref("keycloak", "latest") == "127.0.0.1:5123/keycloak:latest"


def test_nothing_recorded_means_nothing_to_stop_or_reuse(tmp_path: Path) -> None:
    assert registry.stop(tmp_path) is False
    assert registry.current(tmp_path) is None
    assert not (tmp_path / ".registry.lock").exists()


def test_the_registry_reads_no_setting_from_the_environment_and_exports_no_traces() -> None:
    """Distribution reads REGISTRY_* over its config file: REGISTRY_HTTP_ADDR=:5000 would listen on every
    interface. Its OpenTelemetry export is on by default."""
    inherited = {"PATH": "/bin", "REGISTRY_HTTP_ADDR": ":5000", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}
    env = registry.registry_environment(inherited)
    assert env["PATH"] == "/bin" and not any(k.startswith("REGISTRY_") for k in env)
    assert env["OTEL_TRACES_EXPORTER"] == "none" and "OTEL_EXPORTER_OTLP_ENDPOINT" not in env


def test_the_registry_is_debians_served_from_the_written_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawned: dict[str, object] = {}

    def spawn(argv: list[str], log: Path, cwd: Path, env: dict[str, str] | None = None) -> int:
        spawned.update(argv=argv, cwd=cwd, env=env)
        return 4242

    monkeypatch.setattr(registry.process, "spawn", spawn)
    monkeypatch.setattr(registry.process, "alive", lambda pid: True)
    monkeypatch.setattr(registry, "_answers", lambda host: True)
    monkeypatch.setenv("REGISTRY_HTTP_ADDR", ":5000")
    state = registry._start(tmp_path, registry.BINARY, tmp_path / "registry.log", previous=None)

    config = tmp_path / "config.json"
    assert spawned["argv"] == ["/usr/bin/docker-registry", "serve", str(config)]
    assert spawned["cwd"] == tmp_path
    assert "REGISTRY_HTTP_ADDR" not in cast(dict[str, str], spawned["env"])
    assert yaml.safe_load(config.read_text())["http"] == {"addr": f"127.0.0.1:{state.port}"}
    assert state.component == Component(
        "registry", 4242, "/usr/bin/docker-registry", str(tmp_path / "registry.log")
    )
    assert registry.load(tmp_path) == state  # recorded for a later reuse or stop


def test_no_registry_starts_without_its_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "BINARY", tmp_path / "docker-registry")
    with pytest.raises(registry.MissingPackageError, match=r"make host-packages.*docker-registry"):
        registry.ensure_running(tmp_path / "state", tmp_path / "registry.log")
    assert not (tmp_path / "state").exists()


def write_archive(path: Path) -> Path:
    """A stand-in OCI archive: what the push needs is its files there, extracted, when skopeo runs."""
    index = path.parent / "index.json"
    index.write_text('{"schemaVersion": 2, "manifests": []}')
    with tarfile.open(path, "w") as tar:
        tar.add(index, arcname="index.json")
    return path


def test_a_push_copies_the_extracted_layout_keeping_its_digest_over_plain_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = write_archive(tmp_path / "image.oci.tar")
    calls: list[list[str]] = []

    def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        layout = Path(argv[-2].removeprefix("oci:"))
        assert (layout / "index.json").is_file() and layout.parent == tmp_path  # under the registry's dir
        assert kwargs["timeout"] == registry.PUSH_TIMEOUT
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(registry, "_require", lambda program, package: None)
    monkeypatch.setattr(registry.subprocess, "run", run)
    served = registry.Registry("127.0.0.1:5123", tmp_path)
    served.push(archive, served.ref("keycloak", "latest"))

    [argv] = calls
    assert argv[0] == "/usr/bin/skopeo" and "copy" in argv
    assert "--preserve-digests" in argv and "--dest-tls-verify=false" in argv
    assert argv[-2].startswith("oci:") and argv[-1] == "docker://127.0.0.1:5123/keycloak:latest"
    assert list(tmp_path.glob("push-*")) == []  # the extracted layout is gone


def test_a_failed_push_says_what_skopeo_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = write_archive(tmp_path / "image.oci.tar")

    def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 1, "", "Error: manifest digest would change")

    monkeypatch.setattr(registry, "_require", lambda program, package: None)
    monkeypatch.setattr(registry.subprocess, "run", run)
    served = registry.Registry("127.0.0.1:5123", tmp_path)
    with pytest.raises(
        RuntimeError, match=r"skopeo copy .*image\.oci\.tar.*failed \(1\).*digest would change"
    ):
        served.push(archive, served.ref("keycloak", "latest"))


def test_no_push_without_skopeo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "SKOPEO", tmp_path / "skopeo")
    served = registry.Registry("127.0.0.1:5123", tmp_path)
    with pytest.raises(registry.MissingPackageError, match=r"make host-packages.*skopeo"):
        served.push(tmp_path / "image.oci.tar", served.ref("keycloak", "latest"))
