"""Counts write requests from kube-apiserver's own /metrics: the operator's code is not asked."""

from __future__ import annotations

import re
from collections import Counter

_LINE = re.compile(r"^apiserver_request_total\{(?P<labels>[^}]*)\}\s+(?P<value>[0-9.e+]+)$")
_LABEL = re.compile(r'(\w+)="([^"]*)"')
READ_VERBS = {"GET", "LIST", "WATCH", "CONNECT"}


def request_counts(metrics_text: str) -> Counter[tuple[str, str, str]]:
    """(verb, resource, subresource) -> requests so far."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for line in metrics_text.splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        labels = dict(_LABEL.findall(match.group("labels")))
        key = (labels.get("verb", ""), labels.get("resource", ""), labels.get("subresource", ""))
        counts[key] += int(float(match.group("value")))
    return counts


def writes(before: str, after: str, resources: set[str]) -> dict[tuple[str, str, str], int]:
    """Write requests between two scrapes on the given resources, by (verb, resource, subresource)."""
    delta = request_counts(after)
    delta.subtract(request_counts(before))
    return {k: v for k, v in delta.items() if v > 0 and k[0] not in READ_VERBS and k[1] in resources}
