"""Kubernetes' LIST chunking played by the unit tests' fakes over a whole list: the continue token is the
offset of the next page."""

from __future__ import annotations

from typing import Any


def page_of(
    items: list[dict[str, Any]], limit: int, token: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    start = int(token or 0)
    end = start + limit
    return items[start:end], str(end) if end < len(items) else None
