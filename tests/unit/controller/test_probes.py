"""The kubelet's probes of Keycloak (core/probes.py): the defaults, and spec.probes reaching every pod the
operator renders (canonical and green), bounded, part of the version, and seen as drift when changed."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core import drift, probes, versions
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.models import crd
from keycloak_operator.models.pod import PROBE_FAILURES_MAX, PROBE_SECONDS_MAX
from tests.unit import builders
from tests.unit.builders import OWNER, fields_v1, spec

FIELDS = {"startup": "startupProbe", "readiness": "readinessProbe", "liveness": "livenessProbe"}
SETTINGS = {
    "periodSeconds": PROBE_SECONDS_MAX,
    "failureThreshold": PROBE_FAILURES_MAX,
    "timeoutSeconds": PROBE_SECONDS_MAX,
}


def rendered(s: Any, *, green: bool = False) -> dict[str, Any]:
    dep = render_deployment(OWNER, s, image=s.image, track="b" if green else "a", version="v", green=green)
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    return dict(container)


def test_the_defaults() -> None:
    """Startup and readiness every second (a pod is Ready within a second of Keycloak's readiness), ten
    minutes to start; readiness still allows 30 s of failures before the pod leaves the Service; liveness,
    which restarts the container, keeps Kubernetes' own 10 s x 3."""
    c = builders.container(spec())
    timing = {
        f: (c[f]["periodSeconds"], c[f]["failureThreshold"], c[f]["timeoutSeconds"]) for f in FIELDS.values()
    }
    assert timing == {"startupProbe": (1, 600, 1), "readinessProbe": (1, 30, 1), "livenessProbe": (10, 3, 1)}
    # Not shorter than it was before the defaults changed (every 5 s, 60 failures).
    assert c["startupProbe"]["periodSeconds"] * c["startupProbe"]["failureThreshold"] >= 300
    assert c["readinessProbe"]["periodSeconds"] * c["readinessProbe"]["failureThreshold"] == 30


def test_probes_ask_keycloaks_health_endpoints_over_https_with_tls() -> None:
    c = builders.container(spec(tls={"secret": "t"}))
    for field, path in [
        ("startupProbe", "/health/started"),
        ("readinessProbe", "/health/ready"),
        ("livenessProbe", "/health/live"),
    ]:
        assert c[field]["httpGet"] == {"path": path, "port": 9000, "scheme": "HTTPS"}


settings = st.fixed_dictionaries(
    {},
    optional={
        "periodSeconds": st.integers(1, PROBE_SECONDS_MAX),
        "failureThreshold": st.integers(1, PROBE_FAILURES_MAX),
        "timeoutSeconds": st.integers(1, PROBE_SECONDS_MAX),
    },
)


@given(st.fixed_dictionaries({}, optional={k: settings for k in FIELDS}), st.booleans())
def test_overrides_reach_canonical_and_green_pods_unset_fields_keep_the_default(
    overrides: dict[str, dict[str, int]], green: bool
) -> None:
    c = rendered(spec(probes=overrides), green=green)
    defaults = {p.field: p for p in (probes.STARTUP, probes.READINESS, probes.LIVENESS)}
    for key, field in FIELDS.items():
        asked = overrides.get(key, {})
        default = defaults[field]
        assert c[field]["periodSeconds"] == asked.get("periodSeconds", default.period)
        assert c[field]["failureThreshold"] == asked.get("failureThreshold", default.failures)
        assert c[field]["timeoutSeconds"] == asked.get("timeoutSeconds", default.timeout)
        assert c[field]["httpGet"]["path"] == default.path


@pytest.mark.parametrize("probe", list(FIELDS))
@pytest.mark.parametrize(("setting", "too_big"), list(SETTINGS.items()))
@pytest.mark.parametrize("off", [0, -1, "big"])
def test_out_of_range_values_are_refused_naming_the_field(
    probe: str, setting: str, too_big: int, off: Any
) -> None:
    value = too_big + 1 if off == "big" else off
    with pytest.raises(ValidationError) as e:
        spec(probes={probe: {setting: value}})
    assert f"probes.{probe}.{setting}" in str(e.value)


def test_the_crd_bounds_every_setting_and_explains_it() -> None:
    version = crd.keycloak_crd()["spec"]["versions"][0]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert schema["probes"]["description"]
    for probe in FIELDS:
        node = schema["probes"]["properties"][probe]
        assert node["description"]
        for setting, top in SETTINGS.items():
            field = node["properties"][setting]
            assert (field["type"], field["minimum"], field["maximum"]) == ("integer", 1, top)
            assert field["description"]


def test_probes_are_part_of_the_version_unset_changes_nothing() -> None:
    """They are the pods: a change rolls them and is a version a rollback can go back to; an existing
    Keycloak's hash stays what it was."""
    plain = versions.spec_hash(spec())
    assert versions.spec_hash(spec(probes=None)) == plain
    assert versions.spec_hash(spec(probes={"liveness": {"periodSeconds": 20}})) != plain
    assert not versions.is_excluded("probes.liveness.periodSeconds")


def stored(applied: dict[str, Any]) -> dict[str, Any]:
    """As the API server returns it: probe defaults added (successThreshold), managedFields."""
    obj = copy.deepcopy(applied)
    for field in FIELDS.values():
        obj["spec"]["template"]["spec"]["containers"][0][field]["successThreshold"] = 1
    obj["metadata"]["managedFields"] = [
        {"manager": names.FIELD_MANAGER, "operation": "Apply", "fieldsV1": fields_v1(applied)}
    ]
    return obj


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({}, {"startup": {"failureThreshold": 1200}}),
        ({"readiness": {"periodSeconds": 5}}, {}),
        ({}, {"liveness": {"timeoutSeconds": 5}}),
    ],
)
def test_a_change_is_drift_and_a_steady_state_is_not(before: dict[str, Any], after: dict[str, Any]) -> None:
    was = stored(builders.deployment(spec(probes=before)))
    assert not drift.needs_apply(builders.deployment(spec(probes=before)), was)
    assert drift.needs_apply(builders.deployment(spec(probes=after)), was)
