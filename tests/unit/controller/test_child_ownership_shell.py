"""The blue-green machine's writes in the shell (shell/upgrade): each apply and delete reads the name first
and goes ahead only over nothing or over this Keycloak's own object; the machine is never shown another
owner's object as its green, blue or public Service. A fake adapter holds the objects and records calls."""

from __future__ import annotations

from typing import Any

import pytest

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.kernel import names
from keycloak_operator.shell import kube as kube_module
from keycloak_operator.shell import settings, upgrade
from keycloak_operator.shell.kube import Resource
from tests.unit.builders import OWNER, deployment, spec
from tests.unit.controller.test_child_ownership import mine, platforms

NEW = "quay.io/keycloak/keycloak:27.0.1"
KEYCLOAK = {"metadata": {"name": "kc", "namespace": "ns", "uid": OWNER.uid, "generation": 1}, "spec": {}}


class FakeKube:
    """Objects by (resource plural, name); applies and deletes recorded as `verb Kind/name`."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {(kube_module.resource_of(o).plural, o["metadata"]["name"]): o for o in objects}
        self.writes: list[str] = []
        self.preconditions: list[str | None] = []

    async def get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self.objects.get((res.plural, name))

    async def list(self, res: Resource, namespace: str | None, **kw: Any) -> list[dict[str, Any]]:
        return []

    async def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.writes.append(f"apply {obj['kind']}/{obj['metadata']['name']}")
        return obj

    async def delete(self, res: Resource, namespace: str | None, name: str, **kw: Any) -> bool:
        self.writes.append(f"delete {res.plural}/{name}")
        self.preconditions.append(kw.get("uid"))
        return True


@pytest.fixture(autouse=True)
def operator_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(settings.OPERATOR_NAMESPACE_ENV, "kcop")
    kube_module.operator_namespace.cache_clear()


async def perform(fake: FakeKube, action: bg.Action) -> list[str]:
    await upgrade.perform(fake, KEYCLOAK, spec(), action)
    return fake.writes


async def test_the_serving_track_switch_leaves_another_owners_public_service_alone() -> None:
    theirs = platforms("Service", "kc-service")
    assert await perform(FakeKube(theirs), bg.SwitchTraffic(track="b")) == []
    assert await perform(FakeKube(mine(theirs)), bg.SwitchTraffic(track="b")) == ["apply Service/kc-service"]
    assert await perform(FakeKube(), bg.SwitchTraffic(track="b")) == ["apply Service/kc-service"]


async def test_green_is_not_applied_over_another_owners_deployment() -> None:
    theirs = platforms("Deployment", "kc-green-keycloak")
    theirs["apiVersion"] = "apps/v1"
    done = await perform(FakeKube(theirs), bg.ApplyGreen(image=NEW, track="b"))
    assert done == ["apply Service/kc-discovery-b", "apply Service/kc-green-discovery"]


async def test_adoption_is_not_applied_over_another_owners_deployment() -> None:
    theirs = {**platforms("Deployment", "kc-keycloak"), "apiVersion": "apps/v1"}
    assert await perform(FakeKube(theirs), bg.AdoptAsCanonical(image=NEW, track="b")) == []


@pytest.mark.parametrize(
    ("action", "kind", "name"),
    [
        (bg.DeleteGreen(), "Deployment", "kc-green-keycloak"),
        (bg.OrphanGreen(uid="g"), "Deployment", "kc-green-keycloak"),
        (bg.DeleteBlue(uid="b"), "Deployment", "kc-keycloak"),
        (bg.DeleteGreenDiscovery(), "Service", "kc-green-discovery"),
    ],
)
async def test_another_owners_object_is_never_deleted(action: bg.Action, kind: str, name: str) -> None:
    theirs = platforms(kind, name)
    theirs["apiVersion"] = "apps/v1" if kind == "Deployment" else "v1"
    assert await perform(FakeKube(theirs), action) == []
    fake = FakeKube(mine(theirs))
    plural = "deployments" if kind == "Deployment" else "services"
    assert await perform(fake, action) == [f"delete {plural}/{name}"]
    # On condition it is still the object read (or the one the machine saw).
    assert fake.preconditions == [getattr(action, "uid", None) or "theirs"]


async def test_the_machine_is_not_shown_another_owners_objects() -> None:
    s = spec(upgradePolicy={"strategy": "BlueGreen"})
    blue = {**deployment(s), "metadata": platforms("Deployment", "kc-keycloak")["metadata"]}
    public = platforms("Service", "kc-service")
    public["spec"]["selector"] = {names.LABEL_TRACK: "b"}
    green = upgrade.Green(
        deployment=platforms("Deployment", "kc-green-keycloak"),
        discovery_service=platforms("Service", "kc-green-discovery"),
    )
    world = await upgrade.observe(FakeKube(), KEYCLOAK, s, blue, public, green, None)
    assert (world.blue, world.green, world.public_selector_track) == (None, None, None)
    assert not world.green_discovery_exists
    own = upgrade.Green(deployment=mine(green.deployment or {}), discovery_service=None)
    world = await upgrade.observe(FakeKube(), KEYCLOAK, s, mine(blue), mine(public), own, None)
    assert world.blue is not None and world.green is not None and world.public_selector_track == "b"
