"""Settings platform teams set on the Keycloak pods: registry credentials (spec.imagePullSecrets) on the
pods, green's, the extensions' init containers and every Job the operator runs."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from keycloak_operator.core import compatibility_check, database_copy, drift, names, reconcile, versions
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit import builders
from tests.unit.builders import OWNER, fields_v1, spec

render = builders.deployment
pod = builders.pod
PULL = {"imagePullSecrets": [{"name": "registry"}, {"name": "mirror"}]}


def stored(applied: dict[str, Any]) -> dict[str, Any]:
    """As the API server returns it, with the operator's managedFields."""
    obj = copy.deepcopy(applied)
    obj["metadata"]["managedFields"] = [
        {"manager": names.FIELD_MANAGER, "operation": "Apply", "fieldsV1": fields_v1(applied)}
    ]
    return obj


# --- imagePullSecrets -----------------------------------------------------------------------------------


def test_pull_secrets_are_the_pods_so_every_container_in_it_pulls_with_them() -> None:
    s = spec(
        **PULL, extensions=[{"name": "t", "type": "themes", "image": "reg.example/t:1", "path": "/themes"}]
    )
    p = pod(s)
    assert p["imagePullSecrets"] == [{"name": "registry"}, {"name": "mirror"}]
    assert p["initContainers"]  # the extension images are pulled by the same pod
    assert "imagePullSecrets" not in pod(spec())


def test_green_carries_the_pull_secrets() -> None:
    s = spec(**PULL)
    green = reconcile.render_deployment(OWNER, s, image=s.image, track="b", version="v", green=True)
    assert green["spec"]["template"]["spec"]["imagePullSecrets"] == pod(s)["imagePullSecrets"]


def test_the_compatibility_check_pulls_with_both_pods_secrets() -> None:
    old_spec = spec(image="quay.io/keycloak/keycloak:26.7.0", imagePullSecrets=[{"name": "old"}])
    new_spec = spec(imagePullSecrets=[{"name": "old"}, {"name": "new"}])
    old = reconcile.render_deployment(OWNER, old_spec, image=old_spec.image, track="a", version="1#a")
    new = reconcile.render_deployment(OWNER, new_spec, image=new_spec.image, track="a", version="2#b")
    job = compatibility_check.job(OWNER, old, new, "kc-compat-1")
    assert job["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "old"}, {"name": "new"}]
    plain = compatibility_check.job(OWNER, render(spec()), render(spec()), "kc-compat-1")
    assert "imagePullSecrets" not in plain["spec"]["template"]["spec"]


def test_the_database_copy_job_pulls_with_them() -> None:
    s = KeycloakSpec.model_validate(
        {
            "image": builders.IMAGE,
            "database": {"external": {"host": "pg", "credentialsSecret": {"name": "pg"}}},
            "upgradePolicy": {"strategy": "BlueGreen", "databaseCopy": {"image": "reg.example/pg:17"}},
            **PULL,
        }
    )
    job = database_copy.job(OWNER, s, name="kc-dbcopy-1", source="keycloak", target="keycloak_2")
    assert job["spec"]["template"]["spec"]["imagePullSecrets"] == PULL["imagePullSecrets"]


@pytest.mark.parametrize(
    "value",
    [
        [{"name": "../other-ns/secret"}],
        [{"name": "Upper"}],
        [{"name": ""}],
        [{"name": "a"}, {"name": "a"}],
        [{"name": f"s{i}"} for i in range(17)],
    ],
)
def test_hostile_pull_secrets_are_refused_naming_the_field(value: list[dict[str, str]]) -> None:
    with pytest.raises(ValidationError, match="imagePullSecrets"):
        spec(imagePullSecrets=value)


def test_pull_secrets_are_part_of_the_version_and_unset_changes_nothing() -> None:
    assert versions.spec_hash(spec(**PULL)) != versions.spec_hash(spec())
    assert versions.spec_hash(spec(imagePullSecrets=None)) == versions.spec_hash(spec())


def test_pull_secrets_taken_out_are_drift() -> None:
    was = stored(render(spec(**PULL)))
    assert not drift.needs_apply(render(spec(**PULL)), was)
    assert drift.needs_apply(render(spec()), was)
