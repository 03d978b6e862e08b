"""The shipped examples (examples/*.yaml) are what their kinds accept, and the Keycloak's upgrade policy
takes any later release of its image without being refused: a patch, a minor and a major upgrade each have a
path (the planner's, as `keycloak-operator plan` prints it). tests/integration/test_doc_examples.py applies
them to a real API server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from keycloak_operator.core import upgrade_plan
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.models.client import KeycloakClientSpec
from keycloak_operator.models.group import KeycloakGroupSpec
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.realm import KeycloakRealmSpec
from tests.unit.builders import OWNER

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
MODELS = {
    names.KEYCLOAK_KIND: KeycloakSpec,
    "KeycloakRealm": KeycloakRealmSpec,
    "KeycloakClient": KeycloakClientSpec,
    "KeycloakGroup": KeycloakGroupSpec,
}


def docs() -> list[dict[str, Any]]:
    found = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        found += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return found


def test_the_examples_have_a_keycloak_a_realm_a_client_and_a_group() -> None:
    assert {d["kind"] for d in docs() if d["apiVersion"] == names.API_VERSION} == set(MODELS)


@pytest.mark.parametrize("doc", [d for d in docs() if d["kind"] in MODELS], ids=lambda d: d["kind"])
def test_each_example_is_valid(doc: dict[str, Any]) -> None:
    MODELS[doc["kind"]].model_validate(doc["spec"])


def test_the_realm_client_and_group_name_the_examples_keycloak_and_realm() -> None:
    by_kind = {d["kind"]: d for d in docs()}
    assert (
        by_kind["KeycloakRealm"]["spec"]["server"]["keycloak"]["name"]
        == by_kind["Keycloak"]["metadata"]["name"]
    )
    realm = by_kind["KeycloakRealm"]["metadata"]["name"]
    assert by_kind["KeycloakClient"]["spec"]["realm"]["name"] == realm
    assert by_kind["KeycloakGroup"]["spec"]["realm"]["name"] == realm


def later(image: str, bump: str) -> str:
    repository, tag = image.rsplit(":", 1)
    major, minor, patch = (int(p) for p in tag.split("."))
    version = {"patch": (major, minor, patch + 1), "minor": (major, minor + 1, 0), "major": (major + 1, 0, 0)}
    return f"{repository}:{'.'.join(str(n) for n in version[bump])}"


@pytest.mark.parametrize("bump", ["patch", "minor", "major"])
def test_the_example_keycloak_upgrades_without_being_refused(bump: str) -> None:
    keycloak = next(d for d in docs() if d["kind"] == names.KEYCLOAK_KIND)
    running = keycloak["spec"]["image"]
    wanted = KeycloakSpec.model_validate({**keycloak["spec"], "image": later(running, bump)})
    plan = upgrade_plan.for_spec(wanted, running)
    assert plan.path != upgrade_plan.REFUSE, plan.reason
    assert plan.zero_downtime, plan  # BlueGreen with a database copy: no downtime on any of them


def test_the_example_keycloak_shows_the_recommended_high_availability_placement() -> None:
    """The operator adds no placement of its own (core/scheduling.py: an operator upgrade would roll every
    Keycloak), so the shipped example carries the recommendation: a soft spread over nodes and zones, each
    Deployment's pods on their own, and resource requests."""
    keycloak = next(d for d in docs() if d["kind"] == names.KEYCLOAK_KIND)
    spec = KeycloakSpec.model_validate(keycloak["spec"])
    deployment = render_deployment(OWNER, spec, image=spec.image, track="a", version="v")
    pod = deployment["spec"]["template"]
    spread = pod["spec"]["topologySpreadConstraints"]
    assert [(c["topologyKey"], c["whenUnsatisfiable"], c["maxSkew"]) for c in spread] == [
        ("kubernetes.io/hostname", "ScheduleAnyway", 1),
        ("topology.kubernetes.io/zone", "ScheduleAnyway", 1),
    ]
    assert all(c["labelSelector"] == {"matchLabels": names.server_selector("kc", "a")} for c in spread)
    (container,) = pod["spec"]["containers"]
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    assert "memory" in container["resources"]["limits"]
    assert spec.replicas > 1  # and so the default PodDisruptionBudget
