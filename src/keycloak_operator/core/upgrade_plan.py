"""The upgrade planner: from the running and the wanted image, the one path Keycloak supports, and why.

Pure and total: any two image references (typos, digests, moving tags) give a plan and never an exception.
What Keycloak supports (docs/guide/upgrades.md, ADR 0016):

- A minor or major release migrates the schema when it starts, after which the old release cannot use the
  database; every old node must stop first. No downgrade across such a migration except restoring a backup.
- Patch releases of one minor line roll, old and new nodes side by side on one database, from 26.6 on.
- `kc.sh update-compatibility check` (26.2+) answers for one pair: exit 0 rolling possible, 3 not; 4 (the
  feature is off), 1 and 2 (errors) tell nothing, and the version rule decides.

| change                                  | strategy  | db copy  | allowDowntime | path              |
|-----------------------------------------|-----------|----------|---------------|-------------------|
| same image                              | any       | -        | -             | None (no upgrade) |
| to an older minor or major line         | any       | -        | -             | Refuse            |
| compatible (check 0, or patch on 26.6+) | Recreate  | -        | -             | Roll              |
| compatible                              | BlueGreen | -        | -             | BlueGreenShared   |
| not compatible (check 3, minor, major,  | Recreate  | -        | -             | Recreate          |
|   patch before 26.6, unknown versions)  |           |          |               |                   |
| not compatible                          | BlueGreen | possible | -             | BlueGreenCopy     |
| not compatible                          | BlueGreen | no       | true          | Recreate          |
| not compatible                          | BlueGreen | no       | false         | Refuse            |
| compatible, green renamed, jdbc-ping, to 26.8+ | BlueGreen | as "not compatible" (copy, Recreate, Refuse) |

A check's 0 never overrides a downgrade across a minor line: Keycloak has no way back over a migration.
From 26.8, jdbc-ping nodes report unhealthy when another cluster name uses their database, so green may share
blue's database only under blue's cache cluster name (ADR 0021).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from keycloak_operator.core import database_copy, rollout
from keycloak_operator.core.cache_cluster import resolve_cache_cluster
from keycloak_operator.core.images import ImageParseError, SemVer, parse_image, parse_semver, release_of
from keycloak_operator.core.releases import (
    JDBC_PING_NAME_CHECK_SINCE,
    NAME_HONOURED_SINCE,
    PATCH_ROLLING_SINCE,
    line_of,
    line_text,
)
from keycloak_operator.models.keycloak import KeycloakSpec

Path = Literal["None", "Roll", "BlueGreenShared", "BlueGreenCopy", "Recreate", "Refuse"]
Strategy = Literal["Recreate", "BlueGreen"]

NONE: Final = "None"
ROLL: Final = "Roll"
BLUE_GREEN_SHARED: Final = "BlueGreenShared"
BLUE_GREEN_COPY: Final = "BlueGreenCopy"
RECREATE: Final = "Recreate"
REFUSE: Final = "Refuse"
PATHS: Final = (NONE, ROLL, BLUE_GREEN_SHARED, BLUE_GREEN_COPY, RECREATE, REFUSE)
# Paths that keep serving sign-ins throughout.
ZERO_DOWNTIME: Final = frozenset({ROLL, BLUE_GREEN_SHARED, BLUE_GREEN_COPY})

CHECK_COMPATIBLE: Final = 0
CHECK_INCOMPATIBLE: Final = 3
_CHECK_MEANING: Final = {
    1: "failed with an unexpected error (exit 1)",
    2: "was given an invalid option (exit 2)",
    4: "found the rolling-updates feature disabled (exit 4)",
}


@dataclass(frozen=True)
class PlanInput:
    running_image: str
    wanted_image: str
    strategy: Strategy = "Recreate"
    copy_possible: bool = False  # green can get a copy of the database (tier and this operator's support)
    no_copy_because: str = ""  # why a copy the user asked for cannot be used, if so
    allow_downtime: bool = False  # BlueGreen: Recreate is acceptable when no zero-downtime path exists
    check_exit: int | None = None  # `kc.sh update-compatibility check` with the wanted image, when it ran
    jdbc_ping: bool = False  # the pods find each other through the database (cacheIsolation.stack)
    green_renamed: bool = False  # green's cache cluster name would differ from the running pods'
    # The releases read from the images' files by their preflights (ADR 0024): they win over the tags.
    running_release: str = ""
    wanted_release: str = ""


@dataclass(frozen=True)
class Plan:
    path: Path
    reason: str  # for people: the versions, what Keycloak supports between them, and what follows
    compatible: bool  # old and new may run side by side on one database and in one cache cluster

    @property
    def zero_downtime(self) -> bool:
        return self.path in ZERO_DOWNTIME


@dataclass(frozen=True)
class _Pair:
    old: SemVer | None  # None: the tag names no fixed release (digest, `latest`, a typo)
    new: SemVer | None
    same_repository: bool


def _repository(image: str) -> str | None:
    ref = parse_image(image)
    return None if isinstance(ref, ImageParseError) else ref.name


def _pair(running: str, wanted: str, running_release: str = "", wanted_release: str = "") -> _Pair:
    old_repo = _repository(running)
    old = parse_semver(running_release) if running_release else release_of(running)
    new = parse_semver(wanted_release) if wanted_release else release_of(wanted)
    return _Pair(old, new, old_repo is not None and old_repo == _repository(wanted))


def _release(v: SemVer) -> str:
    return f"{v.major}.{v.minor}.{v.patch}" + (f"-{v.prerelease}" if v.prerelease else "")


def _version_rule(p: _Pair) -> tuple[bool, str]:
    """(compatible, why) from the version numbers alone."""
    if not p.same_repository:
        return False, "the images come from different repositories, so nothing is known about their releases"
    if p.old is None or p.new is None:
        which = "running" if p.old is None else "wanted"
        return False, f"the {which} image's tag names no fixed release (not MAJOR.MINOR.PATCH)"
    old, new = p.old, p.new
    if old.prerelease or new.prerelease:
        return False, f"{_release(old)} -> {_release(new)} involves a pre-release, which Keycloak never rolls"
    if line_of(old) != line_of(new):
        kind = "major" if old.major != new.major else "minor"
        return False, (
            f"{_release(old)} -> {_release(new)} is a {kind} change: the new release migrates the schema "
            "when it starts and the old one cannot run on it"
        )
    if line_of(old) < PATCH_ROLLING_SINCE:
        return False, (
            f"{_release(old)} -> {_release(new)} is a patch change on the {old.major}.{old.minor} line; "
            f"Keycloak rolls patch releases only from {line_text(PATCH_ROLLING_SINCE)} on"
        )
    return True, (
        f"{_release(old)} -> {_release(new)} is a patch change on the {old.major}.{old.minor} line, which "
        "Keycloak rolls (rolling-updates:v2)"
    )


def _compatibility(p: _Pair, check_exit: int | None) -> tuple[bool, str]:
    if check_exit == CHECK_COMPATIBLE:
        return True, "kc.sh update-compatibility check: rolling update possible (exit 0)"
    if check_exit == CHECK_INCOMPATIBLE:
        return False, "kc.sh update-compatibility check: rolling update not possible (exit 3)"
    compatible, why = _version_rule(p)
    if check_exit is None:
        return compatible, why
    meaning = _CHECK_MEANING.get(check_exit, f"exited {check_exit}")
    return compatible, f"kc.sh update-compatibility check {meaning}, so the version rule decides: {why}"


def _downgrade(p: _Pair) -> str | None:
    """Why going from old to new crosses a schema migration backwards, or None."""
    if not p.same_repository or p.old is None or p.new is None or line_of(p.new) >= line_of(p.old):
        return None
    old, new = _release(p.old), _release(p.new)
    kind = "major" if p.new.major < p.old.major else "minor"
    return (
        f"{old} -> {new} goes back to an older {kind} line: {old} has migrated the schema and {new} cannot "
        "run on it (Keycloak has no downgrade). Set the image back to the running one; to return to "
        f"{new}, restore a backup taken before the upgrade into a new database and run {new} on that"
    )


def _name_checked(given: PlanInput, p: _Pair) -> bool:
    """Green beside blue on one database would trip 26.8's jdbc-ping cluster-name check (`jdbc_ping`: blue
    writes discovery rows, green reads them; `green_renamed`: the names Keycloak uses differ)."""
    return (
        given.jdbc_ping
        and given.green_renamed
        and p.new is not None
        and line_of(p.new) >= JDBC_PING_NAME_CHECK_SINCE
    )


def plan(given: PlanInput) -> Plan:
    if given.running_image == given.wanted_image:
        return Plan(NONE, "the running image is the wanted one", True)
    pair = _pair(given.running_image, given.wanted_image, given.running_release, given.wanted_release)
    backwards = _downgrade(pair)
    if backwards is not None:
        return Plan(REFUSE, backwards, False)
    compatible, why = _compatibility(pair, given.check_exit)
    if compatible and given.strategy == "BlueGreen" and _name_checked(given, pair):
        # One database cannot hold both colours here: on from the not-compatible rows (a copy, a recreate
        # with allowDowntime, or a refusal).
        compatible = False
        why = (
            f"{why}; but from {line_text(JDBC_PING_NAME_CHECK_SINCE)} jdbc-ping nodes report unhealthy when "
            "another cluster name uses their database, and green would run beside blue under a new one "
            "(keep the name: autoRevision keeps it within a major line; or use cacheIsolation.stack "
            "kubernetes)"
        )
    if compatible:
        if given.strategy == "BlueGreen":
            return Plan(BLUE_GREEN_SHARED, f"{why}: green runs beside blue on the same database", True)
        return Plan(ROLL, f"{why}: pods are replaced one by one, old and new serving together", True)
    if given.strategy == "Recreate":
        return Plan(RECREATE, f"{why}: every old pod stops before the first new one starts (downtime)", False)
    if given.copy_possible:
        return Plan(
            BLUE_GREEN_COPY,
            f"{why}: green migrates a copy of the database made when the upgrade starts and serves from it "
            "after cutover; blue's writes after the copy do not reach green",
            False,
        )
    if given.no_copy_because:
        why = f"{why}; no copy for green: {given.no_copy_because}"
    if given.allow_downtime:
        return Plan(
            RECREATE,
            f"{why}; no database copy can be made for green, and allowDowntime is set: every old pod stops "
            "before the first new one starts (downtime)",
            False,
        )
    return Plan(
        REFUSE,
        f"{why}; blue-green needs a database copy for green here, and none can be made for this database. "
        "Set upgradePolicy.databaseCopy to give green a copy; or set "
        "upgradePolicy.allowDowntime to recreate instead (downtime); or set the image back to the running "
        "one",
        False,
    )


def for_deployment(
    spec: KeycloakSpec,
    keycloak_name: str,
    running: dict[str, Any],
    check_exit: int | None = None,
    wanted_release: str = "",
) -> Plan:
    """The plan for moving the pods of Deployment `running` to `spec`: for_spec, knowing whether the
    running pods write jdbc-ping discovery rows and whether green would use another cluster name than
    theirs, as Keycloak uses names: the rendered one from 26.7, `ISPN` before (ADR 0021)."""
    running_image = rollout.image_of(running)
    green_name = resolve_cache_cluster(keycloak_name, spec.cache_isolation, spec.image).name
    renamed = _name_in_use(green_name, spec.image) != _name_in_use(
        rollout.cache_cluster_of(running), running_image
    )
    blue_jdbc_ping = rollout.cache_stack_of(running) == "jdbc-ping"
    return for_spec(
        spec,
        running_image,
        check_exit,
        green_renamed=renamed,
        blue_jdbc_ping=blue_jdbc_ping,
        running_release=rollout.image_version_of(running),
        wanted_release=wanted_release,
    )


def _name_in_use(rendered: str | None, image: str) -> str:
    """The cluster name a Keycloak of `image` runs under when `rendered` is set: Keycloak's default `ISPN`
    unless it honours the name (26.7 on); unknown releases are taken at their word."""
    version = release_of(image)
    if rendered is None or (version is not None and line_of(version) < NAME_HONOURED_SINCE):
        return "ISPN"
    return rendered


def for_spec(
    spec: KeycloakSpec,
    running_image: str,
    check_exit: int | None = None,
    *,
    green_renamed: bool = False,
    blue_jdbc_ping: bool | None = None,
    running_release: str = "",
    wanted_release: str = "",
) -> Plan:
    """The plan for moving the pods running `running_image` to `spec`'s image under `spec`'s policy.

    A database copy is offered where the user asked for one (upgradePolicy.databaseCopy): a Job on the
    managed and external tiers, a recovered Cluster on cnpg. Otherwise an upgrade that needs one under
    BlueGreen recreates (allowDowntime) or is refused, instead of sharing a database it cannot share.
    `check_exit`: the compatibility check's answer for this change (core/compatibility_check.py), if any.
    """
    policy = spec.upgrade_policy
    planned = plan(
        PlanInput(
            running_image,
            spec.image,
            strategy=policy.strategy,
            copy_possible=database_copy.copy_possible(spec),
            no_copy_because=database_copy.why_no_copy(spec) if policy.database_copy is not None else "",
            allow_downtime=policy.allow_downtime,
            check_exit=check_exit,
            # Blue writes the rows green would find (as rendered; unknown: as the spec says).
            jdbc_ping=spec.cache_isolation.stack_in_use == "jdbc-ping"
            and (blue_jdbc_ping if blue_jdbc_ping is not None else True),
            green_renamed=green_renamed,
            running_release=running_release,
            wanted_release=wanted_release,
        )
    )
    if planned.path != RECREATE:
        return planned
    return Plan(planned.path, planned.reason + no_way_back(spec), planned.compatible)


def no_way_back(spec: KeycloakSpec) -> str:
    """Said before a recreate (in the plan, so in status.upgradePlan.reason and the UpgradePlanned event):
    across a schema migration only a backup taken before it leads back, and the operator takes none before
    a recreate; on the external tier it cannot take one at all (blue-green's pre-upgrade backup is the
    cnpg and managed tiers' only)."""
    after = "once the new release has migrated the schema the old one cannot use it"
    if spec.database.external is not None:
        return (
            f"; no way back: {after}, and the operator cannot back up an external database: take a backup "
            "of your own before this upgrade"
        )
    return f"; no way back unless you take a backup first: {after}, and a recreate takes none"


def first_creation() -> Plan:
    """No pods run yet: the image simply starts, whatever it is."""
    return Plan(NONE, "no Keycloak pods run yet: the first start is not an upgrade", True)


_WHAT_HAPPENS: Final = {
    NONE: "no upgrade: the image starts as it is, or is already running",
    ROLL: "pods are replaced one by one; sign-ins keep working",
    BLUE_GREEN_SHARED: "a green Deployment starts beside blue on the same database; traffic switches once "
    "every green pod is Ready; sign-ins keep working",
    BLUE_GREEN_COPY: "green migrates a copy of the database; writes made on blue after the copy do not reach "
    "green",
    RECREATE: "DOWNTIME: every old pod stops before the first new one starts; sign-ins fail until a new pod "
    "is Ready (Keycloak's start, about a minute)",
    REFUSE: "nothing changes: the operator refuses this image (Degraded, UpgradeRefused) and the running "
    "version keeps serving",
}


def measured(
    path: str, last_path: str, downtime_seconds: int | None, write_window_seconds: int | None
) -> str:
    """What this Keycloak's last upgrade by the same path measured, for people weighing this one: a
    Recreate's downtime, a copy's write window ("" when there is no such figure)."""
    if path != last_path:
        return ""
    if path == RECREATE and downtime_seconds is not None:
        return (
            f"the last Recreate of this Keycloak had no ready pod for {downtime_seconds} s "
            "(status.upgradePlan.downtimeSeconds)"
        )
    if path == BLUE_GREEN_COPY and write_window_seconds is not None:
        return (
            f"the last copy upgrade of this Keycloak had a write window of {write_window_seconds} s: what "
            "blue wrote then did not reach green (status.blueGreen.writeWindowSeconds)"
        )
    return ""


def summary(
    p: Plan, running_image: str, wanted_image: str, check: str = "", last: str = "", proved: str = ""
) -> str:
    """What `keycloak-operator plan` prints: the path, what it means for sign-ins, and why; the image's
    preflight (`proved`, core/preflight.for_plan), Keycloak's own compatibility check (`check`) and the
    figure the same path measured last time (`last`) when known."""
    rows = [
        ("running", running_image or "-"),
        ("wanted", wanted_image),
        ("preflight", proved),
        ("check", check),
        ("path", p.path),
        ("effect", _WHAT_HAPPENS[p.path]),
        ("why", p.reason),
        ("measured", last),
    ]
    return "\n".join(f"{label:<9} {value}" for label, value in rows if value)
