"""The metric names PromQL expressions query (localcluster/promql.py) and those a /metrics page offers."""

from __future__ import annotations

import json

import yaml
from hypothesis import given
from hypothesis import strategies as st

from localcluster import promql
from localcluster.helm import CHART


def test_functions_aggregations_labels_ranges_and_numbers_are_not_names() -> None:
    expr = (
        'histogram_quantile(0.95, sum by (le, state) (rate(kcop_x_bucket{job=~"$job", kind="a"}[5m]))) '
        "/ on (job) group_left (pod) kcop_y > 1e3 and bool 2"
    )
    assert promql.metric_names(expr) == {"kcop_x_bucket", "kcop_y"}


def test_grafana_variables_strings_offsets_and_subqueries() -> None:
    expr = (
        'sum(rate(a_total{uri!="/x{y}"}[$__rate_interval] offset 1h)) without (pod) '
        'or max_over_time(b[1h:5m]) unless label_replace(c, "d", "$1", "e", "(.*)") or absent(f:g)'
    )
    assert promql.metric_names(expr) == {"a_total", "b", "c", "f:g"}


def test_a_bare_name_and_a_comparison() -> None:
    assert promql.metric_names("kcop_leading") == {"kcop_leading"}
    assert promql.metric_names("(max by (namespace, job) (up) < 1) or absent(up)") == {"up"}


names = st.from_regex(r"[a-z_][a-z0-9_]{0,20}", fullmatch=True).filter(
    lambda n: (
        n not in {"and", "or", "unless", "bool", "by", "without", "on", "ignoring", "offset", "inf", "nan"}
        and n not in {"group_left", "group_right", "start", "end"}
    )
)


@given(st.lists(names, min_size=1, max_size=4), st.sampled_from(["sum", "max", "rate", "increase", "avg"]))
def test_names_composed_into_an_expression_are_found(chosen: list[str], fn: str) -> None:
    parts = [f'{fn} by (le) ({n}{{a="b", c=~"$v"}}[5m])' if i % 2 else n for i, n in enumerate(chosen)]
    assert promql.metric_names(" + ".join(parts)) == set(chosen)


def test_dashboard_queries_include_nested_panels_and_variables() -> None:
    dashboard = {
        "panels": [
            {"targets": [{"expr": "a"}]},
            {"type": "row", "panels": [{"targets": [{"expr": "rate(b[1m])"}, {"refId": "x"}]}]},
        ],
        "templating": {
            "list": [
                {"type": "query", "query": {"query": 'label_values(c{n=~"$n"}, service)'}},
                {"type": "query", "query": "label_values(job)"},
                {"type": "datasource", "query": "prometheus"},
            ]
        },
    }
    exprs = promql.dashboard_expressions(dashboard)
    assert set().union(*(promql.metric_names(e) for e in exprs)) == {"a", "b", "c"}


def test_the_shipped_files_query_the_operators_metrics() -> None:
    dashboard = json.loads((CHART / "files" / "dashboard.json").read_text())
    rules = yaml.safe_load((CHART / "files" / "prometheus-rules.yaml").read_text())
    queried = set().union(
        *(
            promql.metric_names(e)
            for e in promql.dashboard_expressions(dashboard) + promql.rule_expressions(rules)
        )
    )
    assert {"kcop_leading", "kcop_replicated_resources", "http_server_requests_seconds_count"} <= queried
    assert not {n for n in queried if n in {"job", "le", "pod", "state", "namespace"}}


EXPOSITION = """# HELP a_total Things.
# TYPE a_total counter
a_total{k="v"} 1.0
a_created{k="v"} 1.7e9
# HELP h Durations.
# TYPE h histogram
# HELP g A gauge.
# TYPE g gauge
g 2.0
untyped_one 3
"""


def test_exposed_names_cover_families_without_series_yet() -> None:
    assert promql.exposed_names(EXPOSITION) == {
        "a_total",
        "a_created",
        "h_bucket",
        "h_sum",
        "h_count",
        "h_created",
        "g",
        "untyped_one",
    }


def test_every_operator_metric_the_shipped_files_query_is_one_the_operator_defines() -> None:
    """The in-process half of the live check in tests/integration/test_replication.py: a misspelt kcop_ name
    fails here, in seconds."""
    from prometheus_client import REGISTRY, generate_latest

    import keycloak_operator.shell.metrics  # noqa: F401  (defines and registers every operator metric)

    dashboard = json.loads((CHART / "files" / "dashboard.json").read_text())
    rules = yaml.safe_load((CHART / "files" / "prometheus-rules.yaml").read_text())
    exprs = promql.dashboard_expressions(dashboard) + promql.rule_expressions(rules)
    queried = set().union(*(promql.metric_names(e) for e in exprs))
    ours = {n for n in queried if n.startswith("kcop_") or n == "process_resident_memory_bytes"}
    assert ours and ours - promql.exposed_names(generate_latest(REGISTRY).decode()) == set()
