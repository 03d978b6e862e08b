"""The local cluster's registry stage, as far as it is pure: its configuration (loopback only, storage under
the cluster's state dir), its record on disk and the references it names. Starting it, pushing to it and the
real node pulling from it are integration tests (test_real_recreate)."""

from __future__ import annotations

from pathlib import Path

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
