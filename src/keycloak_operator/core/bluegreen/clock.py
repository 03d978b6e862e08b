"""Timestamps in status.blueGreen: RFC 3339 UTC strings to the second, and deadlines read back from them."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utc(now: datetime) -> datetime:
    """A naive datetime is taken as UTC, so callers cannot mix local and UTC times by accident."""
    return now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)


def stamp(now: datetime) -> str:
    return utc(now).strftime(_FORMAT)


def after(now: datetime, seconds: float) -> str:
    """now + seconds, rounded UP to the second: a stored deadline is never earlier than asked for."""
    at = utc(now) + timedelta(seconds=seconds)
    return stamp(datetime.fromtimestamp(math.ceil(at.timestamp()), UTC))


def parse(text: str) -> datetime | None:
    """A stored timestamp in UTC; None when it cannot be read (a hand-edited status)."""
    try:
        return utc(datetime.fromisoformat(text))
    except (ValueError, OverflowError):  # OverflowError: 0001-01-01T00:00:00+14:00 is before year 1 in UTC
        return None


def remaining(deadline: str, now: datetime) -> float:
    """Seconds left before `deadline`, never negative. An unreadable deadline counts as passed: a
    hand-edited status then fails safe (roll back, or end a drain) instead of waiting forever."""
    at = parse(deadline)
    return 0.0 if at is None else max((at - utc(now)).total_seconds(), 0.0)


def expired(deadline: str, now: datetime) -> bool:
    return remaining(deadline, now) <= 0.0
