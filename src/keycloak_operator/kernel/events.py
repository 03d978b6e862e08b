"""A Kubernetes Event as the pure decisions return it: both cores report through it, the shell posts it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

EventType = Literal["Normal", "Warning"]


@dataclass(frozen=True)
class Event:
    type: EventType
    reason: str
    message: str
