from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from keycloak_operator.core.replication.objects import invalid_spec
from keycloak_operator.kernel import names
from keycloak_operator.models import crd, generated
from keycloak_operator.models.client import KeycloakClientSpec
from tests.unit import builders

ROOT = Path(__file__).resolve().parents[3]


def test_committed_generated_files_match_the_models() -> None:
    """The CRDs, the chart's copy of them and the chart's RBAC rules."""
    for path, content in generated.files().items():
        assert (ROOT / path).read_text() == content, f"{path} is stale: run `make crds`"


def _walk(node: object) -> list[dict]:
    found: list[dict] = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found.extend(_walk(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_walk(value))
    return found


def test_schema_is_structural() -> None:
    for doc in yaml.safe_load_all(crd.render_yaml()):
        schema = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for node in _walk(schema):
            assert "$ref" not in node and "anyOf" not in node and "$defs" not in node
            if "properties" in node:
                assert node["type"] == "object"


def test_keycloak_crd_has_subresources_columns_and_rules() -> None:
    version = crd.keycloak_crd()["spec"]["versions"][0]
    assert version["subresources"]["scale"]["specReplicasPath"] == ".spec.replicas"
    assert "status" in version["subresources"]
    columns = {c["name"] for c in version["additionalPrinterColumns"]}
    assert {"Image", "Ready", "Phase", "Version", "Upgrade"} <= columns
    schema = version["schema"]["openAPIV3Schema"]
    database = schema["properties"]["spec"]["properties"]["database"]
    assert "exactly one" in database["x-kubernetes-validations"][0]["message"]
    assert schema["properties"]["spec"]["properties"]["image"]["description"]


def _client_spec_schema() -> dict:
    return builders.crd_schema(names.CLIENT_KIND)["spec"]


def test_each_mapped_role_at_most_once_the_api_server_refuses_duplicates() -> None:
    """serviceAccountRoles and a client role's composites are sets: a list type the API server enforces,
    naming the field (`Duplicate value`), as the model does."""
    spec = _client_spec_schema()["properties"]
    for refs in (spec["serviceAccountRoles"], spec["roles"]["items"]["properties"]["composites"]):
        assert refs["properties"]["realm"]["x-kubernetes-list-type"] == "set"
        assert refs["properties"]["clients"]["additionalProperties"]["x-kubernetes-list-type"] == "set"


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"serviceAccountRoles": {"realm": ["reader", "reader"]}}, "spec.serviceAccountRoles.realm"),
        (
            {"serviceAccountRoles": {"clients": {"web": ["a", "b", "a"]}}},
            "spec.serviceAccountRoles.clients.web",
        ),
        ({"roles": [{"name": "x", "composites": {"realm": ["a", "a"]}}]}, "spec.roles.0.composites.realm"),
    ],
)
def test_the_model_refuses_a_role_mapped_twice_naming_the_field(fields: dict, where: str) -> None:
    spec = {"realm": {"name": "r"}, "clientId": "c", "serviceAccountsEnabled": True, **fields}
    with pytest.raises(ValidationError) as caught:
        KeycloakClientSpec.model_validate(spec)
    verdict = invalid_spec(caught.value)
    assert verdict.message.startswith(f"{where}: ") and "each role at most once" in verdict.message


def test_roles_named_once_each_are_taken() -> None:
    spec = {"realm": {"name": "r"}, "clientId": "c", "serviceAccountsEnabled": True}
    refs = {"realm": ["a", "b"], "clients": {"web": ["a"], "api": ["a"]}}
    KeycloakClientSpec.model_validate({**spec, "serviceAccountRoles": refs})
