"""`kill -USR1 <operator pid>` logs the stack of every asyncio task: what a stuck operator is waiting on."""

from __future__ import annotations

import asyncio
import io
import logging
import signal

log = logging.getLogger(__name__)


def _dump() -> None:
    tasks = asyncio.all_tasks()
    buf = io.StringIO()
    for task in sorted(tasks, key=lambda t: t.get_name()):
        buf.write(f"--- task {task.get_name()}\n")
        task.print_stack(file=buf, limit=25)
    log.warning("%d asyncio tasks:\n%s", len(tasks), buf.getvalue())


def install() -> None:
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, _dump)
