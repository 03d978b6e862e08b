"""Which options each Keycloak release line marks build-time: the options `kc.sh build --help-all` lists
(PROVISIONAL: to be replaced by the distributions' own lists)."""

from __future__ import annotations

from typing import Final

from keycloak_operator.core.releases import Line

_PROVISIONAL: Final = frozenset(
    {"db", "health-enabled", "metrics-enabled", "cache", "cache-stack", "features", "features-disabled"}
)
BY_LINE: Final[dict[Line, frozenset[str]]] = {(26, 7): _PROVISIONAL}
SPI_BUILD_TIME_SUFFIXES: Final = ("-provider", "-provider-default", "-enabled")
