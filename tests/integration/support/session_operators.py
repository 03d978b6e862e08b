"""The session's operators (the `operator` fixture's), and stopping them while a test runs operators of its
own.

This state lives here, not in conftest.py, because conftest.py is imported twice: pytest names it
`integration.conftest` (tests/ is no package), and a test module that imports from it gets a second copy,
`tests.integration.conftest`, with a list of its own, always empty. The two-version test stopped the session
operator through that copy, so it stopped nothing: the standalone session operator went on beside the two
replicas and wrote the newest stored format while the old replica lived. A support module has one name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Protocol


class _Operator(Protocol):
    def alive(self) -> bool: ...
    def stop(self) -> None: ...
    def start(self, *args: str) -> None: ...


SESSION_OPERATORS: list[_Operator] = []


@contextlib.contextmanager
def session_operators_stopped() -> Iterator[None]:
    """The session's operators that run are stopped for the block and started again after it, however it
    ends."""
    stopped = [p for p in SESSION_OPERATORS if p.alive()]
    for proc in stopped:
        proc.stop()
    try:
        yield
    finally:
        for proc in stopped:
            proc.start("--all-namespaces")
