"""Duration strings as the CRD accepts them ("15m", "1h30m", "10s", "500ms") to seconds and back.

The accepted grammar is the CRD's own pattern (models.upgrade_policy.DURATION_PATTERN): one or more
`<number><unit>` parts, units ms, s, m and h, no sign and no spaces. The API server already rejects anything
else; parsing it again here keeps a hand-built spec (tests, defaults) from slipping through.
"""

from __future__ import annotations

import re

_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# "ms" is listed before "m" so "5ms" is five milliseconds, not five minutes followed by a stray "s".
_PART = r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)"
_WHOLE_RE = re.compile(rf"^(?:{_PART})+$")
_PART_RE = re.compile(_PART)


def parse(text: str) -> float:
    """Seconds in `text`; the parts add up ("1h30m" is 5400.0). Raises ValueError on anything else."""
    if not _WHOLE_RE.match(text):
        raise ValueError(f"not a duration: {text!r} (expected e.g. 15m, 1h30m, 10s, 500ms)")
    return sum(float(number) * _UNIT_SECONDS[unit] for number, unit in _PART_RE.findall(text))


def format_seconds(seconds: float) -> str:
    """The shortest readable form, to the millisecond: 5400 -> "1h30m", 0.5 -> "500ms", 0 -> "0s"."""
    if seconds < 0:
        raise ValueError(f"negative duration: {seconds}")
    millis = round(seconds * 1000)
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    parts = [f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s"), (millis, "ms")) if n]
    return "".join(parts) or "0s"
