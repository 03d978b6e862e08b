"""The chart's pod settings and its ServiceMonitor, rendered by `helm template` (helm built from its Go
module and cached, as the integration tests use it): what each value puts in the Deployment, and the values
that would take over what the chart owns (the selector's labels, the environment it derives from its own
values) refused with the value named."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from localcluster import versions
from localcluster.helm import CHART, ensure_helm

NAMESPACE = "kcop-system"
SELECTOR = {"app.kubernetes.io/name": "keycloak-operator", "app.kubernetes.io/instance": "kcop"}


@pytest.fixture(scope="module")
def helm() -> Path:
    return ensure_helm()


def run(helm: Path, tmp_path: Path, command: str, values: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    # Values from a file, as a user's values.yaml: --set reads "1" as a number and dots in keys as nesting.
    given = tmp_path / "values.yaml"
    given.write_text(yaml.safe_dump(values))
    argv = [str(helm), command]
    if command == "template":
        argv += ["kcop", "--namespace", NAMESPACE, f"--kube-version={versions.K8S_VERSION}"]
    else:
        argv += ["--strict", "--namespace", NAMESPACE]
    argv += [str(CHART), "--values", str(given)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def render(helm: Path, tmp_path: Path, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    proc = run(helm, tmp_path, "template", values)
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in docs}


def refusal(helm: Path, tmp_path: Path, values: dict[str, Any]) -> str:
    proc = run(helm, tmp_path, "template", values)
    assert proc.returncode != 0, "rendered although it should be refused"
    return proc.stderr


def pod(docs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    template: dict[str, Any] = docs["Deployment/kcop"]["spec"]["template"]
    return template


def env(docs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    variables: list[dict[str, Any]] = pod(docs)["spec"]["containers"][0]["env"]
    return variables


def test_by_default_no_extra_metadata_no_priority_class_and_no_service_monitor(
    helm: Path, tmp_path: Path
) -> None:
    docs = render(helm, tmp_path, {})
    assert pod(docs)["metadata"] == {"labels": SELECTOR}
    assert "priorityClassName" not in pod(docs)["spec"]
    assert [v["name"] for v in env(docs)] == [
        "POD_ID",
        "KCOP_OPERATOR_NAMESPACE",
        "KCOP_PEERING_LIFETIME",
        "KCOP_RESYNC_SECONDS",
        "KCOP_REVOCATION_GRACE_SECONDS",
    ]
    assert not [name for name in docs if name.startswith("ServiceMonitor/")]


def test_pod_labels_annotations_and_priority_class_reach_the_pod_and_the_selector_stays(
    helm: Path, tmp_path: Path
) -> None:
    docs = render(
        helm,
        tmp_path,
        {
            "podLabels": {"team": "platform", "sidecar.istio.io/inject": "false"},
            "podAnnotations": {"prometheus.io/scrape": "true", "note": "a: b\nc"},
            "priorityClassName": "platform-critical",
        },
    )
    deployment = docs["Deployment/kcop"]
    assert pod(docs)["metadata"]["labels"] == {
        **SELECTOR,
        "team": "platform",
        "sidecar.istio.io/inject": "false",
    }
    assert pod(docs)["metadata"]["annotations"] == {"prometheus.io/scrape": "true", "note": "a: b\nc"}
    assert pod(docs)["spec"]["priorityClassName"] == "platform-critical"
    assert deployment["spec"]["selector"]["matchLabels"] == SELECTOR
    assert docs["Service/kcop-metrics"]["spec"]["selector"] == SELECTOR


@pytest.mark.parametrize("key", sorted(SELECTOR))
def test_a_pod_label_of_the_selector_is_refused_naming_the_value(
    helm: Path, tmp_path: Path, key: str
) -> None:
    stderr = refusal(helm, tmp_path, {"podLabels": {"team": "a", key: "mine"}})
    assert f"podLabels.{key}: the chart's selector label" in stderr


def test_extra_env_comes_after_the_charts_own(helm: Path, tmp_path: Path) -> None:
    extra = [
        {"name": "KCOP_ROUND_BUDGET_SECONDS", "value": "180"},
        {"name": "HTTPS_PROXY", "valueFrom": {"secretKeyRef": {"name": "proxy", "key": "url"}}},
    ]
    variables = env(render(helm, tmp_path, {"extraEnv": extra}))
    assert variables[-2:] == extra
    assert len(variables) == 7


def test_every_variable_the_chart_sets_is_refused_in_extra_env(helm: Path, tmp_path: Path) -> None:
    """The refusal reads the chart's own list: a variable the chart adds is protected with no second list."""
    for variable in env(render(helm, tmp_path, {})):
        extra = [{"name": "HTTPS_PROXY", "value": "x"}, {"name": variable["name"], "value": "1"}]
        stderr = refusal(helm, tmp_path, {"extraEnv": extra})
        assert f"extraEnv[1].name: {variable['name']} is set by the chart" in stderr


def test_the_service_monitor_scrapes_the_metrics_service(helm: Path, tmp_path: Path) -> None:
    values = {"serviceMonitor": {"enabled": True, "interval": "1m30s", "labels": {"release": "prometheus"}}}
    docs = render(helm, tmp_path, values)
    monitor, service = docs["ServiceMonitor/kcop"], docs["Service/kcop-metrics"]
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["namespace"] == NAMESPACE
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    spec = monitor["spec"]
    assert spec["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    # It selects the metrics Service by the Service's own labels, and its port by the Service's port name.
    assert spec["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert spec["endpoints"] == [{"port": "metrics", "path": "/metrics", "interval": "1m30s"}]
    assert [p["name"] for p in service["spec"]["ports"]] == ["metrics"]


def test_a_service_monitor_label_of_the_charts_is_refused(helm: Path, tmp_path: Path) -> None:
    values = {"serviceMonitor": {"enabled": True, "labels": {"app.kubernetes.io/name": "x"}}}
    stderr = refusal(helm, tmp_path, values)
    assert "serviceMonitor.labels.app.kubernetes.io/name: a label the chart sets" in stderr


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"podAnnotation": {}}, "additional properties 'podAnnotation' not allowed"),
        (
            {"serviceMonitor": {"enabled": True, "intervall": "1m"}},
            "additional properties 'intervall' not allowed",
        ),
        ({"serviceMonitor": {"interval": "30"}}, "at '/serviceMonitor/interval'"),
        ({"serviceMonitor": {"enabled": "yes"}}, "at '/serviceMonitor/enabled'"),
        ({"extraEnv": [{"name": "A", "value": 1}]}, "at '/extraEnv/0/value'"),
        ({"extraEnv": [{"name": "A", "valuefrom": {}}]}, "additional properties 'valuefrom' not allowed"),
        ({"extraEnv": [{"value": "1"}]}, "at '/extraEnv/0'"),
        ({"podLabels": {"team": True}}, "at '/podLabels/team'"),
        ({"priorityClassName": "Not A Name"}, "at '/priorityClassName'"),
        ({"ingress": {"allowedGateways": ["shared"]}}, "at '/ingress/allowedGateways/0'"),
        ({"ingress": {"allowedGateway": []}}, "additional properties 'allowedGateway' not allowed"),
    ],
)
def test_a_misspelt_or_mistyped_value_is_refused_by_the_schema(
    helm: Path, tmp_path: Path, values: dict[str, Any], message: str
) -> None:
    assert message in refusal(helm, tmp_path, values)


def test_allowed_gateways_become_the_operators_gateway_flags(helm: Path, tmp_path: Path) -> None:
    docs = render(helm, tmp_path, {"ingress": {"allowedGateways": ["gateways/shared", "team-a/own"]}})
    args = pod(docs)["spec"]["containers"][0]["args"]
    assert [a for a in args if a.startswith("--gateway")] == [
        "--gateway=gateways/shared",
        "--gateway=team-a/own",
    ]
    assert not [a for a in pod(render(helm, tmp_path, {}))["spec"]["containers"][0]["args"] if "gateway" in a]


def test_the_chart_lints_with_every_new_value_set(helm: Path, tmp_path: Path) -> None:
    values = {
        "podLabels": {"team": "platform"},
        "podAnnotations": {"note": "x"},
        "priorityClassName": "platform-critical",
        "extraEnv": [{"name": "KCOP_ROUND_BUDGET_SECONDS", "value": "180"}],
        "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
        "ingress": {"allowedGateways": ["gateways/shared"]},
    }
    proc = run(helm, tmp_path, "lint", values)
    assert proc.returncode == 0, proc.stdout + proc.stderr
