"""The chart's values.schema.json and values.yaml describe the same values: every default has a schema
entry of its type (so a new value cannot ship unchecked), every schema entry has a default, and objects
refuse unknown keys (so a misspelt value fails helm; helm itself is run on it in
tests/integration/test_install.py). The chart's kubeVersion and the Python package's version agree with the
chart's."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

CHART = Path(__file__).resolve().parents[3] / "deploy" / "helm" / "keycloak-operator"
SCHEMA = json.loads((CHART / "values.schema.json").read_text())
VALUES = yaml.safe_load((CHART / "values.yaml").read_text())
TYPES = {"object": dict, "array": list, "string": str, "integer": int, "boolean": bool}


def paths(values: dict[str, Any], schema: dict[str, Any], at: str = "") -> list[str]:
    """Where values and schema disagree, as messages naming the value."""
    wrong = []
    props = schema.get("properties", {})
    if schema.get("additionalProperties") is not False:
        wrong.append(f"{at or '.'}: the schema must set additionalProperties: false (typos pass otherwise)")
    for key, value in values.items():
        where = f"{at}.{key}" if at else key
        if key not in props:
            wrong.append(f"{where}: in values.yaml, not in values.schema.json")
            continue
        entry = props[key]
        kind = TYPES.get(entry.get("type", ""))
        if kind is None or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            wrong.append(f"{where}: default {value!r} is not of the schema's type {entry.get('type')!r}")
        elif "enum" in entry and value not in entry["enum"]:
            wrong.append(f"{where}: default {value!r} is not one of {entry['enum']}")
        elif kind is dict and "properties" in entry:
            wrong += paths(value, entry, where)
    for key in props:
        if key not in values and key != "global":
            wrong.append(f"{at + '.' if at else ''}{key}: in values.schema.json, no default in values.yaml")
    return wrong


def test_values_and_schema_agree() -> None:
    assert paths(VALUES, SCHEMA) == []


def test_a_misspelt_value_is_named() -> None:
    assert paths({**VALUES, "imagePullSecret": []}, SCHEMA) == [
        "imagePullSecret: in values.yaml, not in values.schema.json"
    ]
    nested = {**VALUES, "image": {**VALUES["image"], "pullpolicy": "Never"}}
    assert paths(nested, SCHEMA) == ["image.pullpolicy: in values.yaml, not in values.schema.json"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"replicas": "2"}, "replicas: default '2' is not of the schema's type 'integer'"),
        ({"logFormat": "xml"}, "logFormat: default 'xml' is not one of ['text', 'json']"),
    ],
)
def test_a_default_of_the_wrong_type_is_named(change: dict[str, Any], message: str) -> None:
    assert paths({**VALUES, **change}, SCHEMA) == [message]


def test_the_chart_and_the_package_are_one_version_on_kubernetes_from_1_30() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((CHART.parents[2] / "pyproject.toml").read_text())["project"]
    assert chart["version"] == chart["appVersion"] == project["version"]
    # lifecycle.preStop.sleep is on by default from 1.30; the CRDs' CEL `sets` library is accepted from 1.30.
    assert chart["kubeVersion"] == ">=1.30.0-0"
