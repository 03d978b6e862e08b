"""Memory and CPU of a process, read from /proc: peak RSS, RSS over time, CPU seconds."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


@dataclass
class Usage:
    """Samples a process every `interval` seconds while `run()` is awaited as a task."""

    pid: int
    interval: float = 1.0
    samples: list[tuple[float, float]] = field(default_factory=list)  # (seconds since start, RSS MB)

    async def run(self) -> None:
        started = time.monotonic()
        while True:
            try:
                self.samples.append((time.monotonic() - started, rss_mb(self.pid)))
            except FileNotFoundError:
                return
            await asyncio.sleep(self.interval)

    @property
    def peak_mb(self) -> float:
        return max((mb for _, mb in self.samples), default=0.0)
