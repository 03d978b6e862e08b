"""The Keycloak pods' security context (safe defaults, spec.podSecurityContext / spec.securityContext over
them) and graceful shutdown (spec.shutdown.delaySeconds)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core import children, drift, versions
from keycloak_operator.kernel import names
from tests.unit import builders
from tests.unit.builders import fields_v1, spec

render = builders.deployment
pod = builders.pod
container = builders.container


def test_safe_defaults_meet_the_restricted_pod_security_standard() -> None:
    """runAsNonRoot, RuntimeDefault seccomp, no privilege escalation, no capability: what the `restricted`
    Pod Security Standard asks. No user is forced: the image's own (1000:0 in the official image)."""
    s = spec()
    assert pod(s)["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    assert container(s)["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": False,
    }
    assert "volumes" not in pod(s) and "volumeMounts" not in container(s)


def test_pod_overrides_lie_over_the_defaults_which_stay() -> None:
    s = spec(
        podSecurityContext={
            "runAsUser": 1000,
            "runAsGroup": 0,
            "fsGroup": 0,
            "fsGroupChangePolicy": "OnRootMismatch",
            "supplementalGroups": [4000],
        }
    )
    assert pod(s)["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
        "runAsUser": 1000,
        "runAsGroup": 0,
        "fsGroup": 0,
        "fsGroupChangePolicy": "OnRootMismatch",
        "supplementalGroups": [4000],
    }


def test_a_read_only_root_gets_writable_tmp_and_data() -> None:
    s = spec(securityContext={"readOnlyRootFilesystem": True}, tls={"secret": "t"})
    assert container(s)["securityContext"]["readOnlyRootFilesystem"] is True
    mounts = {m["mountPath"]: m["name"] for m in container(s)["volumeMounts"]}
    volumes = {v["name"]: v for v in pod(s)["volumes"]}
    assert set(mounts) == {"/tmp", "/opt/keycloak/data", "/opt/keycloak/conf/tls"}
    for path in ("/tmp", "/opt/keycloak/data"):
        assert volumes[mounts[path]] == {"name": mounts[path], "emptyDir": {}}
    assert volumes["tls"]["secret"] == {"secretName": "t"}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("podSecurityContext", {"runAsUser": 0}),
        ("podSecurityContext", {"runAsGroup": -1}),
        ("podSecurityContext", {"fsGroupChangePolicy": "Sometimes"}),
        ("podSecurityContext", {"supplementalGroups": [-1]}),
        ("shutdown", {"delaySeconds": -1}),
        ("shutdown", {"delaySeconds": 301}),
    ],
)
def test_out_of_range_values_are_refused_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ValidationError) as e:
        spec(**{field: value})
    assert field in str(e.value)


def test_the_default_shutdown_is_what_it_was() -> None:
    """An operator upgrade must not change the grace period of every Keycloak for a default."""
    assert container(spec())["lifecycle"] == {"preStop": {"sleep": {"seconds": 5}}}
    assert pod(spec())["terminationGracePeriodSeconds"] == 30
    assert children.SHUTDOWN_DELAY_SECONDS == 5 and children.TERMINATION_GRACE_SECONDS == 30


@given(st.integers(min_value=1, max_value=300))
def test_the_grace_period_covers_the_delay_and_keycloaks_own_shutdown(delay: int) -> None:
    """The kubelet counts the preStop sleep inside the grace period; after it Keycloak needs its own
    shutdown-delay (1 s) and shutdown-timeout (10 s), and the JVM a moment to exit."""
    s = spec(shutdown={"delaySeconds": delay})
    assert container(s)["lifecycle"] == {"preStop": {"sleep": {"seconds": delay}}}
    assert pod(s)["terminationGracePeriodSeconds"] == delay + children.SHUTDOWN_MARGIN_SECONDS
    assert children.SHUTDOWN_MARGIN_SECONDS >= 1 + 10 + 5


def test_no_delay_no_hook() -> None:
    s = spec(shutdown={"delaySeconds": 0})
    assert "lifecycle" not in container(s)
    assert pod(s)["terminationGracePeriodSeconds"] == children.SHUTDOWN_MARGIN_SECONDS


def test_security_and_shutdown_are_part_of_the_version_unset_changes_nothing() -> None:
    """They are the pods: a change rolls them and is a version a rollback can go back to. Unset, the hash
    of an existing Keycloak stays what it was."""
    plain = versions.spec_hash(spec())
    for kw in (
        {"podSecurityContext": {"runAsUser": 1000}},
        {"securityContext": {"readOnlyRootFilesystem": True}},
        {"shutdown": {"delaySeconds": 15}},
    ):
        assert versions.spec_hash(spec(**kw)) != plain, kw
        assert not any(versions.is_excluded(k) for k in kw)


# --- drift ------------------------------------------------------------------------------------------------


def stored(applied: dict[str, Any]) -> dict[str, Any]:
    """As the API server returns it: empty values left out, pod defaults added, managedFields."""
    obj = copy.deepcopy(applied)
    template = obj["spec"]["template"]["spec"]
    template.update({"dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "x"})
    template["containers"][0].update({"terminationMessagePath": "/dev/termination-log"})
    obj["metadata"]["managedFields"] = [
        {"manager": names.FIELD_MANAGER, "operation": "Apply", "fieldsV1": fields_v1(applied)}
    ]
    return obj


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({}, {"securityContext": {"readOnlyRootFilesystem": True}}),
        ({"securityContext": {"readOnlyRootFilesystem": True}}, {}),
        ({}, {"shutdown": {"delaySeconds": 0}}),
        ({"shutdown": {"delaySeconds": 0}}, {}),
        ({"podSecurityContext": {"fsGroup": 0}}, {}),
    ],
)
def test_every_change_is_drift_and_a_steady_state_is_not(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    was = stored(render(spec(**before)))
    assert not drift.needs_apply(render(spec(**before)), was)
    assert drift.needs_apply(render(spec(**after)), was)
