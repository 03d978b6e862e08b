"""spec.truststores, spec.extensions and spec.startOptimized: what they add to the Keycloak pods, what the
CRD refuses, and how the operator reacts to a missing ConfigMap or a removed entry."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core import drift, keycloak_config, pod_extensions, reconcile, versions
from keycloak_operator.models import reserved_env
from keycloak_operator.models.extensions import IMAGE_PATH
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit import builders
from tests.unit.builders import NOW, SECRETS, fields_v1, observed, spec

THEME = {"name": "acme-theme", "image": "registry.example/acme/theme@sha256:" + "a" * 64, "type": "themes"}
PROVIDER = {"name": "audit", "image": "registry.example/acme/audit:1.2", "path": "/opt/audit/jars"}


render = builders.deployment
pod = builders.pod
container = builders.container


def init(s: KeycloakSpec) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in pod(s).get("initContainers", [])}


def mounts(c: dict[str, Any]) -> dict[str, str]:
    return {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}


# --- truststores -------------------------------------------------------------------------------------------


def test_truststores_are_mounted_read_only_where_keycloak_reads_certificates() -> None:
    s = spec(
        truststores=[
            {"name": "corporate", "secret": {"name": "corp-ca"}},
            {"name": "partners", "configMap": {"name": "partner-cas"}},
        ]
    )
    volumes = {v["name"]: v for v in pod(s)["volumes"]}
    assert volumes["truststore-corporate"] == {
        "name": "truststore-corporate",
        "secret": {"secretName": "corp-ca"},
    }
    assert volumes["truststore-partners"] == {
        "name": "truststore-partners",
        "configMap": {"name": "partner-cas"},
    }
    got = {m["mountPath"]: m for m in container(s)["volumeMounts"]}
    for name in ("corporate", "partners"):
        mount = got[f"/opt/keycloak/conf/truststores/{name}"]
        assert mount == {"name": f"truststore-{name}", "mountPath": mount["mountPath"], "readOnly": True}
    # Keycloak reads conf/truststores by itself: no option is set, and truststore-paths stays the user's.
    env = {e["name"] for e in container(s)["env"]}
    assert "KC_TRUSTSTORE_PATHS" not in env
    assert not reserved_env.is_reserved_env("KC_TRUSTSTORE_PATHS")
    assert "initContainers" not in pod(s)  # no extension: no init container, and a plain start
    assert container(s)["args"] == ["start"]


def test_truststore_objects_are_checked_before_pods_roll() -> None:
    s = spec(
        truststores=[
            {"name": "corporate", "secret": {"name": "corp-ca"}},
            {"name": "partners", "configMap": {"name": "partner-cas"}},
        ]
    )
    assert "corp-ca" in keycloak_config.referenced_secrets(s, "kc-initial-admin")
    assert keycloak_config.referenced_config_maps(s) == ["partner-cas"]
    decision = reconcile.decide(s, observed(s, existing_secrets=SECRETS | {"corp-ca"}), now=NOW)
    degraded = next(c for c in decision.status["conditions"] if c["type"] == "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "ConfigMapNotFound")
    assert "partner-cas" in degraded["message"] and "ns" in degraded["message"]
    assert not any(o["kind"] == "Deployment" for o in decision.apply)
    ready = observed(
        s, existing_secrets=SECRETS | {"corp-ca"}, existing_config_maps=frozenset({"partner-cas"})
    )
    assert any(o["kind"] == "Deployment" for o in reconcile.decide(s, ready, now=NOW).apply)
    missing_secret = reconcile.decide(
        s, observed(s, existing_config_maps=frozenset({"partner-cas"})), now=NOW
    )
    degraded = next(c for c in missing_secret.status["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "SecretNotFound" and "corp-ca" in degraded["message"]


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "both", "secret": {"name": "a"}, "configMap": {"name": "b"}},
        {"name": "neither"},
        {"name": "Upper", "secret": {"name": "a"}},
        {"name": "x" * 41, "secret": {"name": "a"}},
        {"name": "bad", "secret": {"name": "../team-b"}},
    ],
)
def test_a_bad_truststore_is_refused(entry: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        spec(truststores=[entry])


def test_names_are_unique_per_list() -> None:
    with pytest.raises(ValidationError, match="truststores ca is listed twice"):
        spec(
            truststores=[{"name": "ca", "secret": {"name": "a"}}, {"name": "ca", "configMap": {"name": "b"}}]
        )
    with pytest.raises(ValidationError, match="extensions audit is listed twice"):
        spec(extensions=[PROVIDER, {**PROVIDER, "image": "other:1"}])


# --- extensions --------------------------------------------------------------------------------------------


def test_a_provider_is_staged_built_once_per_pod_and_keycloak_starts_optimized() -> None:
    s = spec(extensions=[PROVIDER])
    steps = init(s)
    # Order: the image's own providers and themes, then each extension, then the build.
    assert list(steps) == ["extensions-base", "extension-audit", "build"]
    copy_step = steps["extension-audit"]
    assert copy_step["image"] == PROVIDER["image"]
    assert copy_step["command"] == ["cp", "-R", "/opt/audit/jars/.", "/mnt/providers/"]
    assert mounts(copy_step) == {"/mnt/providers": "providers"}
    build = steps["build"]
    assert build["image"] == s.image and "kc.sh build" in build["command"][-1]
    # The build sees exactly Keycloak's environment, so its build options are the ones Keycloak starts with.
    assert build["env"] == container(s)["env"]
    assert mounts(build) == {
        "/opt/keycloak/providers": "providers",
        "/opt/keycloak/themes": "themes",
        "/mnt/build": "build",
    }
    assert mounts(container(s)) == {
        "/opt/keycloak/providers": "providers",
        "/opt/keycloak/themes": "themes",
        "/opt/keycloak/lib/quarkus": "build",
    }
    assert container(s)["args"] == ["start", "--optimized"]
    assert {v["name"]: v for v in pod(s)["volumes"]}["build"] == {"name": "build", "emptyDir": {}}


def test_themes_alone_need_no_build() -> None:
    s = spec(extensions=[THEME])
    assert list(init(s)) == ["extensions-base", "extension-acme-theme"]
    assert init(s)["extension-acme-theme"]["command"] == ["cp", "-R", "/extensions/.", "/mnt/themes/"]
    assert container(s)["args"] == ["start"]
    assert "/opt/keycloak/lib/quarkus" not in mounts(container(s))


def test_copies_run_as_keycloaks_user_never_as_the_images_root() -> None:
    """busybox and most base images run as root, which the pod's runAsNonRoot refuses."""
    s = spec(extensions=[THEME])
    step = init(s)["extension-acme-theme"]
    assert step["securityContext"]["runAsUser"] == pod_extensions.KEYCLOAK_UID
    assert step["securityContext"]["allowPrivilegeEscalation"] is False
    assert step["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    chosen = spec(extensions=[THEME], podSecurityContext={"runAsUser": 4242})
    assert init(chosen)["extension-acme-theme"]["securityContext"]["runAsUser"] == 4242


def test_a_read_only_root_still_builds_in_the_build_container_only() -> None:
    s = spec(extensions=[PROVIDER], securityContext={"readOnlyRootFilesystem": True})
    assert container(s)["securityContext"]["readOnlyRootFilesystem"] is True
    assert init(s)["extension-audit"]["securityContext"]["readOnlyRootFilesystem"] is True
    assert init(s)["build"]["securityContext"]["readOnlyRootFilesystem"] is False


def test_the_build_gets_keycloaks_resources() -> None:
    resources = {"requests": {"memory": "1Gi"}, "limits": {"memory": "2Gi"}}
    s = spec(extensions=[PROVIDER], resources=resources)
    assert init(s)["build"]["resources"] == resources
    assert "resources" not in init(s)["extension-audit"]


def test_start_optimized_without_extensions() -> None:
    s = spec(startOptimized=True)
    assert container(s)["args"] == ["start", "--optimized"]
    assert "initContainers" not in pod(s)


@pytest.mark.parametrize(
    "path", ["relative", "/", "/a/../b", "/a/./b", "/a//b", "/a b", "/a;rm", "/$(x)", "/a/", "-rf", "/-x/../"]
)
def test_an_extension_path_is_a_plain_absolute_directory(path: str) -> None:
    with pytest.raises(ValidationError):
        spec(extensions=[{**PROVIDER, "path": path}])


@given(st.from_regex(IMAGE_PATH, fullmatch=True))
def test_every_admitted_path_is_absolute_without_dot_segments(path: str) -> None:
    segments = path.split("/")
    assert segments[0] == "" and all(seg not in ("", ".", "..") for seg in segments[1:])
    assert not any(c in path for c in " ;$`'\"\\\n")


@pytest.mark.parametrize("bad", [{"image": "a b"}, {"type": "scripts"}, {"name": "-x"}, {"image": ""}])
def test_a_bad_extension_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        spec(extensions=[{**PROVIDER, **bad}])


# --- versions and drift ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({}, {"extensions": [PROVIDER]}),
        (
            {"extensions": [PROVIDER]},
            {"extensions": [{**PROVIDER, "image": "registry.example/acme/audit:1.3"}]},
        ),
        ({"extensions": [PROVIDER]}, {"extensions": [PROVIDER, THEME]}),
        ({}, {"truststores": [{"name": "ca", "secret": {"name": "corp-ca"}}]}),
        ({}, {"startOptimized": True}),
    ],
)
def test_each_change_is_a_new_version(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert versions.version_of(spec(**after)) != versions.version_of(spec(**before))


def _applied(s: KeycloakSpec) -> dict[str, Any]:
    """The Deployment as stored after the operator applied it for `s`."""
    stored = copy.deepcopy(render(s))
    stored["metadata"]["managedFields"] = [
        {"manager": "keycloak-operator", "operation": "Apply", "fieldsV1": fields_v1(stored)}
    ]
    return stored


def test_an_applied_deployment_is_left_alone() -> None:
    s = spec(extensions=[PROVIDER, THEME], truststores=[{"name": "ca", "configMap": {"name": "cas"}}])
    assert not drift.needs_apply(render(s), _applied(s))


def test_taking_the_last_truststore_or_extension_out_is_a_difference() -> None:
    """The only volumes (or init containers) gone: nothing else in the template changes, yet the stale keys
    the operator owns must go."""
    with_store = spec(truststores=[{"name": "ca", "configMap": {"name": "cas"}}])
    assert drift.needs_apply(render(spec()), _applied(with_store))
    with_theme = spec(extensions=[THEME])
    assert drift.needs_apply(render(spec()), _applied(with_theme))
