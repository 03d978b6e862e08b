"""The chart's Grafana dashboard ConfigMap and PrometheusRule, rendered by `helm template`: off by default,
on with the files the chart ships carried unchanged, their labels set and the chart's own refused, and a
misspelt value refused by values.schema.json. (promtool's own check of the rules is an integration test:
tests/integration/test_prometheus_rules.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster.helm import CHART
from tests.unit.harness.test_chart_render import NAMESPACE, helm, refusal, render, run

__all__ = ["helm"]  # the module-scoped fixture, shared

DASHBOARD = CHART / "files" / "dashboard.json"
RULES = CHART / "files" / "prometheus-rules.yaml"


def test_both_are_off_by_default(helm: Path, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, {})
    assert not [n for n in docs if n.startswith("PrometheusRule/") or n == "ConfigMap/kcop-dashboard"]


def test_the_dashboard_configmap_carries_the_shipped_json_with_the_sidecar_label(
    helm: Path, tmp_path: Path
) -> None:
    docs = render(helm, tmp_path, {"grafanaDashboard": {"enabled": True}})
    cm = docs["ConfigMap/kcop-dashboard"]
    assert cm["metadata"]["namespace"] == NAMESPACE
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    assert "annotations" not in cm["metadata"]
    assert json.loads(cm["data"]["keycloak-operator.json"]) == json.loads(DASHBOARD.read_text())


def test_the_dashboard_goes_where_the_sidecar_looks_with_its_labels_and_annotations(
    helm: Path, tmp_path: Path
) -> None:
    values = {
        "grafanaDashboard": {
            "enabled": True,
            "namespace": "monitoring",
            "labels": {"grafana_dashboard": "yes", "team": "identity"},
            "annotations": {"grafana_folder": "Keycloak"},
        }
    }
    cm = render(helm, tmp_path, values)["ConfigMap/kcop-dashboard"]
    assert cm["metadata"]["namespace"] == "monitoring"
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "yes"
    assert cm["metadata"]["labels"]["team"] == "identity"
    assert cm["metadata"]["annotations"] == {"grafana_folder": "Keycloak"}


def test_the_prometheus_rule_carries_the_shipped_rules(helm: Path, tmp_path: Path) -> None:
    values = {"prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}}}
    rule = render(helm, tmp_path, values)["PrometheusRule/kcop"]
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["namespace"] == NAMESPACE
    assert rule["metadata"]["labels"]["release"] == "prometheus"
    assert rule["spec"] == yaml.safe_load(RULES.read_text())
    alerts = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert alerts == {
        "KeycloakOperatorNotLeading",
        "KeycloakOperatorAbsent",
        "KeycloakNotReady",
        "KeycloakUpgradeStalled",
        "KeycloakUpgradeFailed",
        "KeycloakReplicationFailing",
    }


@pytest.mark.parametrize("value", ["grafanaDashboard", "prometheusRule"])
def test_a_label_of_the_charts_is_refused_naming_the_value(helm: Path, tmp_path: Path, value: str) -> None:
    values = {value: {"enabled": True, "labels": {"app.kubernetes.io/instance": "x"}}}
    assert f"{value}.labels.app.kubernetes.io/instance: a label the chart sets" in refusal(
        helm, tmp_path, values
    )


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"grafanaDashboard": {"enable": True}}, "additional properties 'enable' not allowed"),
        ({"prometheusRules": {"enabled": True}}, "additional properties 'prometheusRules' not allowed"),
        ({"prometheusRule": {"enabled": True, "label": {}}}, "additional properties 'label' not allowed"),
        ({"prometheusRule": {"enabled": "true"}}, "at '/prometheusRule/enabled'"),
        (
            {"grafanaDashboard": {"labels": {"grafana_dashboard": 1}}},
            "at '/grafanaDashboard/labels/grafana_dashboard'",
        ),
        ({"grafanaDashboard": {"namespace": "Not A Namespace"}}, "at '/grafanaDashboard/namespace'"),
    ],
)
def test_a_misspelt_or_mistyped_value_is_refused_by_the_schema(
    helm: Path, tmp_path: Path, values: dict[str, Any], message: str
) -> None:
    assert message in refusal(helm, tmp_path, values)


def test_the_chart_lints_with_both_on(helm: Path, tmp_path: Path) -> None:
    values = {"grafanaDashboard": {"enabled": True}, "prometheusRule": {"enabled": True}}
    proc = run(helm, tmp_path, "lint", values)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_dashboards_panels_do_not_overlap_and_each_query_is_filtered_by_its_variables() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells: set[tuple[int, int]] = set()
    for p in panels:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24, p["title"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not mine & cells, p["title"]
        cells |= mine
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    assert variables == {"datasource", "job", "namespace", "keycloak"}
    for p in panels:
        for t in p.get("targets", []):
            assert t["datasource"]["uid"] == "${datasource}", p["title"]
            if "kcop_" in t["expr"] or "process_resident" in t["expr"]:
                assert t["expr"].count('job=~"$job"') >= t["expr"].count("{"), (p["title"], t["expr"])
            else:
                assert 'namespace=~"$namespace", service=~"$keycloak"' in t["expr"], p["title"]
