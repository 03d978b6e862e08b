"""The defaults a new Keycloak's pods get where its spec leaves scheduling and resources unset, and the rule
that a Keycloak made before them never gains them (core/pod_defaults.py, ADR 0028)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import pod_defaults, reconcile, versions
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec, KeycloakStatus
from keycloak_operator.shell.reconciler import with_pod_defaults
from tests.unit.builders import NOW, OWNER, deployment, keycloak, observed, spec


def pods(s: KeycloakSpec, chosen: pod_defaults.Profile, track: str = "a") -> dict[str, Any]:
    applied = pod_defaults.applied(s, chosen)
    rendered = render_deployment(OWNER, applied, image=s.image, track=track, version="v")
    return dict(rendered["spec"]["template"]["spec"])


def test_a_new_keycloak_spreads_softly_over_nodes_and_zones_per_track() -> None:
    for track in ("a", "b"):
        spreads = pods(spec(), pod_defaults.HA, track)["topologySpreadConstraints"]
        assert [c["topologyKey"] for c in spreads] == list(pod_defaults.SPREAD_KEYS)
        for c in spreads:
            # Soft: one node, one zone or an upgrade's extra pod never keeps a pod Pending.
            assert c["whenUnsatisfiable"] == "ScheduleAnyway" and c["maxSkew"] == 1
            assert c["labelSelector"] == {"matchLabels": names.server_selector("kc", track)}


def test_a_new_keycloak_gets_the_official_operators_memory() -> None:
    (container,) = pods(spec(), pod_defaults.HA)["containers"]
    assert container["resources"] == {"requests": {"memory": "1700Mi"}, "limits": {"memory": "2Gi"}}


def test_what_the_spec_sets_is_never_overridden_nor_completed() -> None:
    own = spec(
        scheduling={"nodeSelector": {"zone": "a"}},
        resources={"requests": {"cpu": "2"}},
    )
    rendered = pods(own, pod_defaults.HA)
    assert "topologySpreadConstraints" not in rendered and rendered["nodeSelector"] == {"zone": "a"}
    assert rendered["containers"][0]["resources"] == {"requests": {"cpu": "2"}}


def test_none_leaves_the_spec_as_it_is() -> None:
    s = spec()
    assert pod_defaults.applied(s, pod_defaults.NONE) is s
    rendered = pods(s, pod_defaults.NONE)
    assert "topologySpreadConstraints" not in rendered and "resources" not in rendered["containers"][0]


def test_the_profile_is_ha_for_a_new_keycloak_and_none_for_one_whose_pods_already_run() -> None:
    assert pod_defaults.profile(KeycloakStatus(), None, spec()) == pod_defaults.HA
    assert pod_defaults.profile(KeycloakStatus(), deployment(spec()), spec()) == pod_defaults.NONE


def test_a_lost_status_is_read_back_from_the_deployment() -> None:
    """Restored without its status, an `ha` Keycloak keeps its defaults instead of being rolled to lose
    them; either default in the pods is enough (the spec may set the other field)."""
    for own in ({}, {"resources": {"requests": {"cpu": "1"}}}, {"scheduling": {"nodeSelector": {"a": "b"}}}):
        written = spec(**own)
        with_defaults = pod_defaults.applied(written, pod_defaults.HA)
        assert pod_defaults.profile(KeycloakStatus(), deployment(with_defaults), written) == pod_defaults.HA
    both_set = spec(resources={"requests": {"cpu": "1"}}, scheduling={"nodeSelector": {"a": "b"}})
    assert pod_defaults.profile(KeycloakStatus(), deployment(both_set), both_set) == pod_defaults.NONE


def test_values_the_spec_sets_itself_say_nothing_of_the_profile() -> None:
    """A Keycloak from before the defaults whose spec spells out the official operator's memory (a likely
    copy) is not read as `ha` when its status is lost: it would gain the spread and roll."""
    copied = spec(resources={"requests": {"memory": "1700Mi"}, "limits": {"memory": "2Gi"}})
    assert pod_defaults.profile(KeycloakStatus(), deployment(copied), copied) == pod_defaults.NONE


def test_a_keycloak_between_blue_and_green_with_no_profile_ran_before() -> None:
    """Mid-promotion there is no canonical Deployment; versions or an upgrade in status say it ran."""
    ran = [
        KeycloakStatus.model_validate({"versions": {"currentVersion": "26.7.0#abc"}}),
        KeycloakStatus.model_validate({"versions": {"nextVersion": "26.7.3#abc"}}),
        KeycloakStatus.model_validate({"blueGreen": {"state": "Promoting"}}),
    ]
    for status in ran:
        assert pod_defaults.profile(status, None, spec()) == pod_defaults.NONE


@given(st.sampled_from(sorted(pod_defaults.PROFILES)), st.booleans())
def test_a_recorded_profile_never_changes(recorded: str, has_deployment: bool) -> None:
    dep = deployment(spec()) if has_deployment else None
    assert pod_defaults.profile(KeycloakStatus(pod_defaults=recorded), dep, spec()) == recorded


@given(st.text(max_size=16).filter(lambda v: v not in pod_defaults.PROFILES), st.booleans())
def test_a_forged_profile_reads_as_not_recorded(forged: str, has_deployment: bool) -> None:
    dep = deployment(spec()) if has_deployment else None
    expected = pod_defaults.NONE if has_deployment else pod_defaults.HA
    assert pod_defaults.profile(KeycloakStatus(pod_defaults=forged), dep, spec()) == expected


def test_a_status_without_a_profile_writes_none_of_its_own() -> None:
    """An unrecorded profile is left out of the status's wire form: a patch made from a stale read (a
    Degraded report) must not write an empty profile over the one this pass recorded."""
    assert "podDefaults" not in KeycloakStatus().wire()


def recorded(decision: reconcile.Decision) -> str:
    assert decision.status is not None
    return str(decision.status["podDefaults"])


def test_decide_records_the_profile_the_shell_chose_and_otherwise_keeps_the_recorded_one() -> None:
    s = spec()
    for chosen in (pod_defaults.HA, pod_defaults.NONE):
        assert recorded(reconcile.decide(s, observed(s, pod_defaults=chosen), now=NOW)) == chosen
    kept = observed(s, deployment=deployment(s), status={"phase": "Running", "podDefaults": "ha"})
    decision = reconcile.decide(s, kept, now=NOW)
    assert decision.status is None or recorded(decision) == pod_defaults.HA


def test_the_shell_reads_the_profile_from_a_deployment_of_its_own_only() -> None:
    """A Deployment under the Keycloak's name that it did not make says nothing of what ran before."""
    s = spec()
    foreign = deployment(s)
    foreign["metadata"]["ownerReferences"] = []
    assert with_pod_defaults(s, keycloak(s), foreign)[1] == pod_defaults.HA  # a new Keycloak
    assert with_pod_defaults(s, keycloak(s), deployment(s)) == (s, pod_defaults.NONE)  # its own, without
    version = versions.version_of(with_pod_defaults(s, keycloak(s), None)[0])
    assert version != versions.version_of(s)  # the defaults are part of the version it rolls out
