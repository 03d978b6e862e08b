"""Crash injection for tests: `KCOP_FAILPOINT=after-persist:<state>` SIGKILLs the operator right after it
has stored a blue-green transition into <state>, before any of that state's actions run.

This is how the integration tests prove "survives being killed at any moment" for every state, not just the
ones slow enough to be caught by polling. Unset (always, outside tests), it does nothing.
"""

from __future__ import annotations

import logging
import os
import signal

from keycloak_operator.shell import settings

log = logging.getLogger(__name__)
_FAILPOINT = settings.failpoint()


def after_persist(state: str) -> None:
    if _FAILPOINT and f"after-persist:{state}" == _FAILPOINT:
        log.warning("failpoint %s reached: killing the operator", _FAILPOINT)
        os.kill(os.getpid(), signal.SIGKILL)
