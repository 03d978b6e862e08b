"""One kind's LIST, read page by page (Kubernetes' chunking), so that what one listing holds at once is one
page plus what is kept of it (core/replication/namespace_cap.py: at most the cap per namespace).

A page's `continue` token expires after a while (410 Gone, when the API server compacted the version the
listing started at): the listing starts over from its first page, a few times at most, and then fails as
any refused LIST does. Never is what was read before the 410 returned as if it were the whole list: that
would make the rest look deleted.
"""

from __future__ import annotations

import logging
from typing import Final, Protocol

from keycloak_operator.core.replication.namespace_cap import Obj, Tally
from keycloak_operator.shell.kube import ApiError, Resource

log = logging.getLogger(__name__)

PAGE_SIZE: Final = 250  # items per LIST request: a few MiB of custom resources at most
ATTEMPTS: Final = 3  # listings started over after a 410, then failed


class Pages(Protocol):
    async def list_page(
        self, res: Resource, namespace: str | None, *, limit: int, token: str | None = None
    ) -> tuple[list[Obj], str | None]: ...


async def read_kind(
    kube: Pages, res: Resource, namespace: str | None, cap: int, *, stop_over: bool = False
) -> Tally:
    """Every resource of one kind in `namespace` (None: every namespace), tallied by namespace against `cap`.
    `stop_over`: reading one namespace, stop as soon as it is over the cap (the rest would be dropped)."""
    for attempt in range(1, ATTEMPTS + 1):
        tally = Tally(res.plural, cap)
        token: str | None = None
        try:
            while True:
                items, token = await kube.list_page(res, namespace, limit=PAGE_SIZE, token=token)
                tally.add(items)
                del items
                if token is None or (stop_over and tally.over):
                    return tally
        except ApiError as e:
            if e.status != 410 or attempt == ATTEMPTS:
                raise
            log.info("listing %s again from its first page: its continue token expired (%s)", res.plural, e)
    raise AssertionError("unreachable")  # the loop returns or raises
