"""The shell's part of the operations settings: the facts it observes (whether ServiceMonitors are served,
where the operator runs) and green's NetworkPolicy going before green's pods. A fake adapter records calls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keycloak_operator.core import discovery, versions
from keycloak_operator.core.bluegreen import model as bg
from keycloak_operator.kernel import names
from keycloak_operator.models.upgrade_status import BlueGreenStatus
from keycloak_operator.shell import kube as kube_module
from keycloak_operator.shell import reconciler, settings, upgrade
from keycloak_operator.shell.kube import ApiError, Kube, Resource
from tests.unit.builders import BASE, spec

NEW = "quay.io/keycloak/keycloak:27.0.1"
KEYCLOAK = {"metadata": {"name": "kc", "namespace": "ns", "uid": "u1", "generation": 1}, "spec": BASE}


# Track b's NetworkPolicy, this Keycloak's, as a read by name returns it (with apiVersion and kind).
POLICY_B = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": {
        "name": "kc-keycloak-b",
        "namespace": "ns",
        "uid": "np-b",
        "ownerReferences": [{"uid": "u1", "controller": True}],
    },
    "spec": {},
}


class FakeKube:
    """The adapter's calls the operations settings make, recorded (typed loosely: it stands in for Kube)."""

    def __init__(self, *, served: bool = True) -> None:
        self.calls: list[tuple[str, str]] = []
        self.applied: list[dict[str, Any]] = []
        self.served = served

    async def get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        self.calls.append(("get", res.plural))
        if res == kube_module.NETWORK_POLICIES and name == "kc-keycloak-b":
            return POLICY_B
        return None

    async def list(self, res: Resource, namespace: str | None, **kw: Any) -> list[dict[str, Any]]:
        self.calls.append(("list", f"{res.plural}?{kw.get('label_selector')}"))
        return []

    async def serves(self, res: Resource) -> bool:
        self.calls.append(("serves", res.plural))
        return self.served

    async def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(("apply", f"{obj['kind']}/{obj['metadata']['name']}"))
        self.applied.append(obj)
        return obj


@pytest.fixture(autouse=True)
def operator_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(settings.OPERATOR_NAMESPACE_ENV, "kcop")
    kube_module.operator_namespace.cache_clear()
    yield
    kube_module.operator_namespace.cache_clear()


async def test_discovery_is_asked_only_when_a_service_monitor_is_wanted() -> None:
    fake = FakeKube(served=True)
    plain = await reconciler.observe(fake, KEYCLOAK, spec(), None)
    assert ("serves", "servicemonitors") not in fake.calls and plain.service_monitor_served is False
    # The ServiceMonitor, the Ingress and this Keycloak's NetworkPolicies are read anyway: one of ours may
    # have to go. The policies by name, once per track: another owner's policy under one of those names
    # carries none of this Keycloak's labels, and must be seen to be left alone.
    assert {("get", "servicemonitors"), ("get", "ingresses")} <= set(fake.calls)
    assert fake.calls.count(("get", "networkpolicies")) == len(names.TRACKS)
    assert not [c for c in fake.calls if c[0] == "list" and c[1].startswith("networkpolicies")]
    wanted = spec(monitoring={"serviceMonitor": {"enabled": True}})
    served = await reconciler.observe(FakeKube(served=True), KEYCLOAK, wanted, None)
    assert served.service_monitor_served
    absent = await reconciler.observe(FakeKube(served=False), KEYCLOAK, wanted, None)
    assert not absent.service_monitor_served


async def test_an_observed_policy_can_be_deleted() -> None:
    """A policy the reconcile decides to delete names its resource (read by name, it has apiVersion and
    kind, which list items lack)."""
    observed = await reconciler.observe(FakeKube(), KEYCLOAK, spec(), None)
    (read,) = observed.network_policies
    assert kube_module.resource_of(read) == kube_module.NETWORK_POLICIES


async def test_the_operators_namespace_is_a_fact_passed_in() -> None:
    observed = await reconciler.observe(FakeKube(), KEYCLOAK, spec(), None)
    assert observed.operator_namespace == "kcop"


def test_the_operators_namespace_from_the_environment_then_the_service_account(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    account = tmp_path / "namespace"
    monkeypatch.setattr(kube_module, "SERVICE_ACCOUNT_NAMESPACE", account)
    monkeypatch.delenv(settings.OPERATOR_NAMESPACE_ENV)
    kube_module.operator_namespace.cache_clear()
    assert kube_module.operator_namespace() is None  # outside a cluster: no pod to name
    account.write_text("keycloak-operator\n")
    kube_module.operator_namespace.cache_clear()
    assert kube_module.operator_namespace() == "keycloak-operator"
    monkeypatch.setenv(settings.OPERATOR_NAMESPACE_ENV, "Not A Namespace")
    kube_module.operator_namespace.cache_clear()
    assert kube_module.operator_namespace() is None


async def test_greens_policy_and_membership_service_go_before_greens_pods() -> None:
    fake = FakeKube()
    s = spec(networkPolicy={"enabled": True}, cacheIsolation={"autoRevision": True})
    await upgrade.perform(
        fake, KEYCLOAK, s, bg.ApplyGreen(image="quay.io/keycloak/keycloak:27.0.1", track="b")
    )
    applied = [what for verb, what in fake.calls if verb == "apply"]
    assert applied == [
        "NetworkPolicy/kc-keycloak-b",
        "Service/kc-discovery-b",  # what green's pods query: there before they start (ADR 0018)
        "Deployment/kc-green-keycloak",
        "Service/kc-green-discovery",  # the machine's view of green serving
    ]
    fake = FakeKube()
    await upgrade.perform(
        fake, KEYCLOAK, spec(), bg.ApplyGreen(image="quay.io/keycloak/keycloak:27.0.1", track="b")
    )
    assert not [c for c in fake.calls if c[1].startswith("NetworkPolicy")]


async def test_a_copy_upgrades_green_gets_no_colour_named_discovery_and_its_own_database() -> None:
    """Pods rendered before ADR 0018 query `<name>-green-discovery`: on a copy upgrade none is made, so a blue
    of that template cannot find green; the machine reads green's own track Service instead."""
    fake = FakeKube()
    external = {"external": {"host": "pg", "credentialsSecret": {"name": "pg"}}}
    s = spec(
        image="quay.io/keycloak/keycloak:26.5.6", cacheIsolation={"autoRevision": True}, database=external
    )
    copy = bg.ApplyGreen(image=NEW, track="b", database="keycloak_27_0_1_abcdef", apart=True)
    await upgrade.perform(fake, KEYCLOAK, s, copy)
    applied = {f"{o['kind']}/{o['metadata']['name']}": o for o in fake.applied}
    assert set(applied) == {"Service/kc-discovery-b", "Deployment/kc-green-keycloak"}
    assert applied["Service/kc-discovery-b"]["spec"]["selector"][names.LABEL_TRACK] == "b"
    dep = applied["Deployment/kc-green-keycloak"]
    env = {e["name"]: e.get("value") for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["KC_DB_URL_DATABASE"] == "keycloak_27_0_1_abcdef"
    # The version is the spec's as written (which database serves is status): it completes nextVersion.
    wanted = versions.version_of(s.model_copy(update={"image": NEW})).format()
    assert dep["metadata"]["annotations"][names.ANNOTATION_VERSION] == wanted
    stored = BlueGreenStatus(state="WaitingForGreen", path="BlueGreenCopy", green_track="b")
    assert discovery.green_view("kc", stored) == "kc-discovery-b"
    assert (
        discovery.green_view("kc", stored.model_copy(update={"path": "BlueGreenShared"}))
        == "kc-green-discovery"
    )


async def test_serves_reads_api_discovery(monkeypatch: pytest.MonkeyPatch) -> None:
    adapter = object.__new__(Kube)
    answers: dict[str, Any] = {}

    async def call(method: str, path: str, **_: Any) -> Any:
        answer = answers[path]
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(adapter, "_call", call)
    res = kube_module.SERVICE_MONITORS
    answers["/apis/monitoring.coreos.com/v1"] = {
        "resources": [{"name": "podmonitors"}, {"name": "servicemonitors"}]
    }
    assert await adapter.serves(res)
    answers["/apis/monitoring.coreos.com/v1"] = {"resources": [{"name": "podmonitors"}]}
    assert not await adapter.serves(res)
    answers["/apis/monitoring.coreos.com/v1"] = ApiError(404, "not found")
    assert not await adapter.serves(res)
    answers["/apis/monitoring.coreos.com/v1"] = ApiError(403, "forbidden")
    with pytest.raises(ApiError):
        await adapter.serves(res)
