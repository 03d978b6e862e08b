from pathlib import Path

import yaml

from keycloak_operator.models import crd, generated

ROOT = Path(__file__).resolve().parents[2]


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
