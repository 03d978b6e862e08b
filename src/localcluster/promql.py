"""The metric names PromQL expressions query, and the names a `/metrics` page offers to be queried: enough to
check that a dashboard and alert rules ask only for series that exist. Pure.

Not a PromQL parser: it removes what cannot be a metric name (strings, label matchers, range and subquery
brackets, Grafana's `$variables`, the label lists of `by`, `without`, `on`, `ignoring` and `group_*`), then
takes each identifier that is not a function call, a keyword or a number.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\[\]]*\]")
_VARIABLE = re.compile(r"\$\{[^}]*\}|\$\w+")
_LABEL_LIST = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_OFFSET = re.compile(r"\boffset\s+-?\w+")
_IDENTIFIER = re.compile(r"(?<![\w.:])([a-zA-Z_:][\w:]*)(\s*\()?")
_KEYWORDS = frozenset(
    {"and", "or", "unless", "bool", "by", "without", "on", "ignoring", "group_left", "group_right"}
    | {"offset", "inf", "nan", "start", "end"}
)
# What a family of each type exposes to queries (prometheus_client names a counter's family without _total).
_SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("", "_sum", "_count", "_created"),
    "gaugehistogram": ("_bucket", "_gsum", "_gcount"),
}


def metric_names(expr: str) -> set[str]:
    """The metric names `expr` selects (`rate(a_total{x="y"}[5m]) / b` -> {a_total, b})."""
    text = _STRING.sub(" ", expr)
    text = _VARIABLE.sub(" ", text)
    text = _MATCHERS.sub(" ", text)
    text = _RANGE.sub(" ", text)
    text = _LABEL_LIST.sub(" ", text)
    text = _OFFSET.sub(" ", text)
    names = set()
    for m in _IDENTIFIER.finditer(text):
        name, call = m.group(1), m.group(2)
        if call is None and name.lower() not in _KEYWORDS:
            names.add(name)
    return names


def dashboard_expressions(dashboard: Mapping[str, Any]) -> list[str]:
    """Every query of a Grafana dashboard: its panels' (rows' nested panels too) and its variables'."""
    out: list[str] = []

    def panels(items: list[Any]) -> Iterator[Mapping[str, Any]]:
        for p in items:
            yield p
            yield from panels(p.get("panels") or [])

    for p in panels(dashboard.get("panels") or []):
        out += [t["expr"] for t in p.get("targets") or [] if t.get("expr")]
    for var in (dashboard.get("templating") or {}).get("list") or []:
        query = var.get("query")
        text = query.get("query", "") if isinstance(query, Mapping) else ""
        if var.get("type") == "query" and text:
            out.append(_variable_query(text))
    return out


def _variable_query(text: str) -> str:
    """`label_values(metric{...}, label)` and `query_result(expr)` as the expressions they query."""
    m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", text, re.S)
    if m:
        return m.group(1)
    m = re.fullmatch(r"\s*query_result\((.*)\)\s*", text, re.S)
    return m.group(1) if m else text


def rule_expressions(rules: Mapping[str, Any]) -> list[str]:
    """Every `expr` of a Prometheus rule file (`groups:`), alerts and recording rules alike."""
    return [r["expr"] for g in rules.get("groups") or [] for r in g.get("rules") or []]


_TYPE = re.compile(r"^# TYPE (\S+) (\S+)", re.M)
_SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{|\s)", re.M)


def exposed_names(exposition: str) -> set[str]:
    """The names a Prometheus text exposition lets a query select: every sample's, and for each declared
    family those of its type (a labelled family with no series yet still shows its `# TYPE` line)."""
    names = set(_SAMPLE.findall(exposition))
    for family, kind in _TYPE.findall(exposition):
        base = family.removesuffix("_total") if kind == "counter" else family
        names.update(base + s for s in _SUFFIXES.get(kind, ("",)))
    return names
