"""spec.scheduling and spec.podDisruptionBudget: what reaches the pods (green's too), the budget's life."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from keycloak_operator.core import drift, reconcile, scheduling, versions
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit.builders import BASE, NOW, OWNER, fields_v1, observed, spec

PLACEMENT = {
    "nodeSelector": {"kcop.dev/real-node": "true", "zone": "a"},
    "tolerations": [{"key": "kcop.dev/real-node", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
    },
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone"}],
    "priorityClassName": "login-critical",
}


def pod_spec(s: KeycloakSpec, *, track: str = "a", green: bool = False) -> dict[str, Any]:
    rendered = render_deployment(OWNER, s, image=s.image, track=track, version="v", green=green)
    return dict(rendered["spec"]["template"]["spec"])


def test_no_scheduling_adds_nothing_to_the_pods() -> None:
    """The rendering adds nothing of its own: a new Keycloak's defaults are filled into its spec before it
    is rendered (test_pod_defaults.py), so a Keycloak without them is never rolled to gain them."""
    assert not scheduling.POD_SPEC_KEYS & set(pod_spec(spec()))


def test_every_field_reaches_blue_and_green_with_each_tracks_own_spread() -> None:
    s = spec(scheduling=PLACEMENT)
    blue, green = pod_spec(s, track="a"), pod_spec(s, track="b", green=True)
    for rendered, track in ((blue, "a"), (green, "b")):
        assert rendered["nodeSelector"] == PLACEMENT["nodeSelector"]
        assert rendered["tolerations"] == PLACEMENT["tolerations"]
        assert rendered["affinity"] == PLACEMENT["affinity"]
        assert rendered["priorityClassName"] == "login-critical"
        (spread,) = rendered["topologySpreadConstraints"]
        assert spread["whenUnsatisfiable"] == "ScheduleAnyway"
        assert spread["labelSelector"] == {"matchLabels": names.server_selector("kc", track)}


def test_a_spread_selects_exactly_the_pods_of_its_own_deployment() -> None:
    s = spec(scheduling=PLACEMENT)
    for track in ("a", "b"):
        dep = render_deployment(OWNER, s, image=s.image, track=track, version="v")
        template = dep["spec"]["template"]
        selector = template["spec"]["topologySpreadConstraints"][0]["labelSelector"]["matchLabels"]
        assert selector == dep["spec"]["selector"]["matchLabels"]
        assert selector.items() <= template["metadata"]["labels"].items()


def test_scheduling_is_part_of_the_version_and_the_budget_is_not() -> None:
    assert versions.spec_hash(spec(scheduling=PLACEMENT)) != versions.spec_hash(spec())
    assert versions.spec_hash(spec(podDisruptionBudget={"maxUnavailable": 2})) == versions.spec_hash(spec())


def _omitempty(obj: Any) -> Any:
    """What the API server stores: empty strings, lists, maps and nulls left out."""
    if isinstance(obj, dict):
        return {k: _omitempty(v) for k, v in obj.items() if v not in (None, "", [], {})}
    if isinstance(obj, list):
        return [_omitempty(v) for v in obj]
    return obj


def stored(applied: dict[str, Any], *, by_others: dict[str, Any] | None = None) -> dict[str, Any]:
    """`applied` as the API server returns it after the operator applied it (and another writer, maybe,
    merged `by_others` into the pod spec): omitempty, server defaults, managedFields."""
    obj = copy.deepcopy(_omitempty(applied))
    pod = obj["spec"]["template"]["spec"]
    pod.update({"dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler", "restartPolicy": "Always"})
    managed = [{"manager": names.FIELD_MANAGER, "operation": "Apply", "fieldsV1": fields_v1(applied)}]
    if by_others:
        pod.update(by_others)
        other = {"f:spec": {"f:template": {"f:spec": fields_v1(by_others)}}}
        managed.append({"manager": "kubectl-edit", "operation": "Update", "fieldsV1": other})
    obj["metadata"]["managedFields"] = managed
    return obj


def render(s: KeycloakSpec) -> dict[str, Any]:
    return render_deployment(OWNER, s, image=BASE["image"], track="a", version="v")


def test_a_steady_state_is_not_drift_whatever_the_server_left_out_or_added() -> None:
    placed = render(spec(scheduling=PLACEMENT))
    assert not drift.needs_apply(placed, stored(placed))
    empties = {
        "tolerations": [{"key": "k", "operator": "Equal", "value": "", "effect": "NoSchedule"}],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [], "x": None}},
    }
    with_empties = render(spec(scheduling=empties, env=[{"name": "EMPTY", "value": ""}]))
    assert not drift.needs_apply(with_empties, stored(with_empties))


def test_removing_a_placement_field_the_operator_set_is_drift() -> None:
    """Server-side apply removes a field the operator no longer sets, but only if it applies at all."""
    placed, plain = render(spec(scheduling=PLACEMENT)), render(spec())
    assert drift.needs_apply(plain, stored(placed))


def test_a_placement_field_another_writer_added_is_theirs() -> None:
    """A toleration a webhook or `kubectl edit` added is not ours to remove: applying would not remove it, so
    counting it as drift would write on every pass forever."""
    plain = render(spec())
    theirs = {"tolerations": [{"key": "dedicated", "operator": "Exists"}], "priorityClassName": "x"}
    assert not drift.needs_apply(plain, stored(plain, by_others=theirs))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("nodeSelector", {"../x": "y"}),
        ("nodeSelector", {"zone": "not a value"}),
        ("nodeSelector", {"a" * 64: "b"}),
        ("tolerations", [{"key": "k", "operator": "Sometimes"}]),
        ("tolerations", [{"key": "k", "tolerationSeconds": -1}]),
        ("topologySpreadConstraints", [{"maxSkew": 0, "topologyKey": "zone"}]),
        ("topologySpreadConstraints", [{"maxSkew": 1, "topologyKey": "bad key"}]),
        ("priorityClassName", "Not_A_Name"),
    ],
)
def test_hostile_placement_is_refused_naming_the_field(field: str, value: Any) -> None:
    with pytest.raises(ValidationError) as e:
        spec(scheduling={field: value})
    assert field in str(e.value)


_KEY_CHARS = st.sampled_from("abz09-_./AZ")


@given(st.text(_KEY_CHARS, min_size=1, max_size=70))
def test_node_selector_keys_follow_the_label_key_pattern(key: str) -> None:
    ok = bool(re.fullmatch(pt.LABEL_KEY, key))
    try:
        spec(scheduling={"nodeSelector": {key: "v"}})
        accepted = True
    except ValidationError:
        accepted = False
    assert accepted == ok


def budget_of(s: KeycloakSpec) -> dict[str, Any] | None:
    return scheduling.pod_disruption_budget(s, "kc", "ns", OWNER.reference())


def test_the_budget_defaults_to_one_pod_at_a_time_when_there_are_several() -> None:
    pdb = budget_of(spec(replicas=3))
    assert pdb is not None
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    assert budget_of(spec(replicas=1)) is None
    assert budget_of(spec(replicas=3, podDisruptionBudget={"enabled": False})) is None
    assert (
        budget_of(spec(replicas=3, podDisruptionBudget={"maxUnavailable": 2}))["spec"]["maxUnavailable"] == 2
    )  # type: ignore[index]
    with pytest.raises(ValidationError, match="maxUnavailable"):
        spec(podDisruptionBudget={"maxUnavailable": 0})


def test_the_budget_covers_both_tracks() -> None:
    pdb = budget_of(spec(replicas=2))
    assert pdb is not None
    selector = pdb["spec"]["selector"]["matchLabels"]
    for track, green in (("a", False), ("b", True)):
        dep = render_deployment(
            OWNER, spec(replicas=2), image=BASE["image"], track=track, version="v", green=green
        )
        assert selector.items() <= dep["spec"]["template"]["metadata"]["labels"].items()


def decide(s: KeycloakSpec, pdb: dict[str, Any] | None) -> reconcile.Decision:
    return reconcile.decide(s, observed(s, pod_disruption_budget=pdb), now=NOW)


def kinds(objs: list[dict[str, Any]]) -> list[str]:
    return [o["kind"] for o in objs]


def test_the_budget_is_written_once_and_removed_when_replicas_drop_to_one() -> None:
    three = spec(replicas=3)
    assert "PodDisruptionBudget" in kinds(decide(three, None).apply)
    stored = {**copy.deepcopy(budget_of(three)), "status": {"currentHealthy": 3}}  # type: ignore[dict-item]
    stored["metadata"]["uid"] = "pdb-uid"
    assert "PodDisruptionBudget" not in kinds(decide(three, stored).apply)
    one = decide(spec(replicas=1), stored)
    assert "PodDisruptionBudget" not in kinds(one.apply) and one.delete == [stored]


def test_a_budget_the_keycloak_did_not_make_is_never_deleted() -> None:
    foreign = copy.deepcopy(budget_of(spec(replicas=3)))
    assert foreign is not None
    foreign["metadata"]["ownerReferences"] = [{**OWNER.reference(), "uid": "someone-else"}]
    assert decide(spec(replicas=1), foreign).delete == []
