"""The build-time options the pods set: what `kc.sh build` must have persisted into an image for the pods to
start it `--optimized`, with no re-augmentation first (issue 28, ADR 0026).

Keycloak persists, at a build, every build-time option a configuration source gave a value (not the
defaults of the others), and a `start` re-augments unless what it would persist now equals what was
persisted (AbstractAutoBuildCommand.requiresReAugmentation). The
pods' sources are their environment, so the options are the Keycloak container's `KC_*` variables whose
option Keycloak marks build-time for the image's release. Which those are is Keycloak's: the tables below
are `kc.sh build --help-all` of each release line's distribution (core/build_time_options.py).

Pure: from a rendered container's `env`, nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from keycloak_operator.core import build_time_options
from keycloak_operator.core.images import SemVer
from keycloak_operator.core.releases import Line, line_of

# A variable Keycloak maps to an option: `KC_` and upper-case words (`__` is the SPI separator `--`).
_VARIABLE: Final = re.compile(r"^KC_[A-Z0-9]+(_{1,2}[A-Z0-9]+)*$")


@dataclass(frozen=True)
class BuildOptions:
    """The build-time options the pods set. `values`: option -> value, sorted by option; `unknown`: the
    build-time options whose value comes from a Secret or a ConfigMap (the operator cannot know it, so it
    can never say an image matches)."""

    values: tuple[tuple[str, str], ...] = ()
    unknown: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, str]:
        return dict(self.values)


def option_of(variable: str) -> str:
    """The option a `KC_*` variable sets (`KC_HEALTH_ENABLED` -> `health-enabled`, `KC_SPI_A__B` ->
    `spi-a--b`); "" for any other name."""
    if not _VARIABLE.fullmatch(variable):
        return ""
    return variable.removeprefix("KC_").lower().replace("_", "-")


def table_for(version: SemVer | None) -> Line:
    """The release line whose table describes `version`: the newest line not after it; the oldest for an
    older release, the newest for no version (a newer release is most like the newest known)."""
    lines = sorted(build_time_options.BY_LINE)
    if version is None:
        return lines[-1]
    wanted = line_of(version)
    older = [line for line in lines if line <= wanted]
    return older[-1] if older else lines[0]


def is_build_time(option: str, version: SemVer | None) -> bool:
    """Keycloak marks `option` build-time in `version`'s line: listed by `kc.sh build --help-all` (or one
    of its per-datasource or per-feature forms), or an SPI option naming a provider or turning one on or
    off (Keycloak's rule for SPI options, which `--help` does not list)."""
    line = table_for(version)
    if option in build_time_options.BY_LINE[line]:
        return True
    if any(option.startswith(p) and option != p for p in build_time_options.PREFIXES_BY_LINE[line]):
        return True
    return option.startswith("spi-") and option.endswith(build_time_options.SPI_BUILD_TIME_SUFFIXES)


def of_env(env: list[dict[str, Any]], version: SemVer | None) -> BuildOptions:
    """The build-time options a container with environment `env` sets on Keycloak `version` (None: the
    newest known line). A name given twice counts once, as its last entry (Kubernetes' rule)."""
    last: dict[str, dict[str, Any]] = {}
    for entry in env:
        name = str(entry.get("name") or "")
        option = option_of(name)
        if option and is_build_time(option, version):
            last.pop(option, None)
            last[option] = entry
    values = sorted(
        (option, str(entry["value"])) for option, entry in last.items() if "valueFrom" not in entry
    )
    unknown = sorted(option for option, entry in last.items() if "valueFrom" in entry)
    return BuildOptions(tuple(values), tuple(unknown))


def of_pod(pod: dict[str, Any], version: SemVer | None) -> BuildOptions:
    """The build-time options of the Keycloak container of pod spec `pod`."""
    keycloak: dict[str, Any] = next(
        (c for c in pod.get("containers") or [] if c.get("name") == "keycloak"), {}
    )
    return of_env(list(keycloak.get("env") or []), version)
