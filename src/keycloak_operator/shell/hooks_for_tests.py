"""The operator's test hooks, the only two switches that exist for tests: both off unless the environment
turns them on (the chart never does), and both said in the log at startup when on (`announce`).

- `KCOP_FAILPOINT=after-persist:<state>`: the operator SIGKILLs itself right after it stored a blue-green
  transition into <state>, before any of that state's actions run. This is how the integration tests prove
  "survives being killed at any moment" for every state, not only the ones slow enough to be caught by
  polling.
- `KCOP_IDP_ALLOW_LOOPBACK_HTTP`: URLs Keycloak calls (an identity provider's, a client's back-channel
  logout) may be plain http on a loopback or pod address (core/replication/called_urls.py), for tests whose
  upstream runs beside Keycloak.

Like every KCOP_* variable, they are read in settings.py.
"""

from __future__ import annotations

import logging
import os
import signal

from keycloak_operator.shell import settings

log = logging.getLogger(__name__)


def announce() -> None:
    """Called once at startup: a hook that is on is never on silently."""
    if settings.failpoint():
        log.warning(
            "test hook on: KCOP_FAILPOINT=%s (the operator will kill itself there)", settings.failpoint()
        )
    if settings.idp_loopback_http():
        log.warning("test hook on: KCOP_IDP_ALLOW_LOOPBACK_HTTP (Keycloak may be sent to loopback over http)")


def after_persist(state: str) -> None:
    failpoint = settings.failpoint()
    if failpoint and f"after-persist:{state}" == failpoint:
        log.warning("failpoint %s reached: killing the operator", failpoint)
        os.kill(os.getpid(), signal.SIGKILL)
