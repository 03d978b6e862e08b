"""What Keycloak releases do, by version: the one place for "from release X on, Keycloak does Y".

Each fact is the first minor line (MAJOR, MINOR) that has the behaviour; the planner and the cache cluster
name read them here. Sources: docs/guide/upgrades.md, ADRs 0004 and 0016.
"""

from __future__ import annotations

from typing import Final

from keycloak_operator.core.images import SemVer

Line = tuple[int, int]  # a minor line: (MAJOR, MINOR)

# The first line that reads the bootstrap admin from KC_BOOTSTRAP_ADMIN_*; 25.x reads KEYCLOAK_ADMIN and
# KEYCLOAK_ADMIN_PASSWORD (Keycloak 26.0.0 release notes).
BOOTSTRAP_ADMIN_SINCE: Final[Line] = (26, 0)
# The first minor line on which Keycloak rolls between its patch releases by default (rolling-updates:v2).
PATCH_ROLLING_SINCE: Final[Line] = (26, 6)
# The first release with `kc.sh update-compatibility`.
CHECK_SINCE: Final[Line] = (26, 2)
# The first line with `kc.sh start --dry-run`, which the preflight runs (ADR 0024; 25.0.6 answers "Unknown
# option: '--dry-run'").
DRY_RUN_SINCE: Final[Line] = (26, 2)
# The first Keycloak line that honours a cluster name (KC_SPI_CACHE_EMBEDDED__DEFAULT__CLUSTER_NAME, ADR
# 0004); earlier servers join the channel `ISPN` whatever the name (checked on 25.0.6 and 26.5.6).
NAME_HONOURED_SINCE: Final[Line] = (26, 7)


def line_of(version: SemVer) -> Line:
    return (version.major, version.minor)


def line_text(line: Line) -> str:
    """`26.6` for (26, 6)."""
    return f"{line[0]}.{line[1]}"


# The first Keycloak line whose jdbc-ping nodes report unhealthy when another cluster name uses the same
# database (unless the `stateless` feature is on): changes-26_8_0.adoc, "Impact on blue-green deployments".
# Not verified here: no 26.8 distribution is published yet (ADR 0021).
JDBC_PING_NAME_CHECK_SINCE: Final[Line] = (26, 8)
