"""What the preflight's pod runs (core/preflight.py has its Job and its answer), and the report it writes.

One bash script (builtins only: kc.sh needs bash, and the official image guarantees no sed or grep) that:

- reads the version the image really contains from its files: the name of
  `lib/lib/main/org.keycloak.keycloak-core-<version>.jar`, else `/opt/keycloak/version.txt`
  ("Keycloak - Version 26.7.3");
- has Keycloak validate the rendered configuration with the command that costs least and still proves what
  the pods' own start would (ADR 0024, measured on the 26.7.3 distribution):
  - `kc.sh start --dry-run` (`start --optimized --dry-run` when the pods start `--optimized` from the
    image's own build): the pods' start command, validated and not run. It exits 2 on a value or feature
    Keycloak refuses (`KC_HTTP_PORT=abc`, `KC_FEATURES=no-such-feature`), and with `--optimized` on an
    image never built, as those pods would; it builds nothing (2 to 4 s). The option is hidden; 26.4.7,
    26.5.6 and 26.7.3 have it, 25.0.6 answers "Unknown option: '--dry-run'";
  - `kc.sh update-compatibility metadata` (26.2+) when the image carries providers of its own and the pods
    build at start: it builds as `start` would (a minute when the build options differ from the image's,
    about 2 s when they match), and a provider that cannot load fails that build (a provider naming a
    missing class: exit 1), which the dry run does not see. Also the fallback where `--dry-run` is unknown;
  - nothing before 26.2 where `--dry-run` is unknown: the configuration is not checked (said in the answer).
  `kc.sh show-config` and `kc.sh start --help` exit 0 on the bad values above, so they prove nothing;
- reads Keycloak's answer to "does the pods' start build first?" from the dry run of that start, which
  runs Keycloak's own re-augmentation check: "Changes detected in configuration" exactly when it would,
  and, for an image `kc.sh build` made, the build options it would change (ADR 0026). The image keeps its
  build options in a deflated jar entry (`lib/quarkus/generated-bytecode.jar`,
  `META-INF/keycloak-persisted.properties`), which bash builtins cannot read; Keycloak's check also sees
  what that file alone does not (the image's keycloak.conf and Quarkus properties, its providers);
- writes what it found to the pod's termination message, which the kubelet keeps with the pod's status.

The script's one argument says how the pods start: `optimized` or `build`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from keycloak_operator.core import pod_extensions
from keycloak_operator.core.images import parse_semver

DIR: Final = "/tmp/kcop-preflight"
TAIL_LINES: Final = 8
LINE_MAX: Final = 300
_COMMAND_MAX: Final = 80
# Keycloak's list of the build options a start would change, kept within the kubelet's 4096 bytes of
# termination message with the rest of the report (the failure tail is written only when no list is).
CHANGED_MAX: Final = 16
CHANGE_MAX: Final = 160

Start = Literal["optimized", "build"]

SCRIPT: Final = (
    r"""
kc=/opt/keycloak
txt=""; [ -r "$kc/version.txt" ] && read -r txt < "$kc/version.txt"
jar=""
for f in "$kc"/lib/lib/main/org.keycloak.keycloak-core-*.jar; do
  [ -e "$f" ] && { jar=${f##*/org.keycloak.keycloak-core-}; jar=${jar%.jar}; }
done
v=${jar:-${txt##* }}
IFS=. read -r major minor _ <<< "$v"
providers=""
for f in "$kc"/providers/*.jar; do [ -e "$f" ] && providers=yes; done
dry=(start --dry-run); metadata=(update-compatibility metadata --file=__DIR__/metadata.json)
if [ "$1" = optimized ]; then dry=(start --optimized --dry-run); metadata+=(--optimized); fi
has_metadata=""
command=()
if [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ && -x "$kc/bin/kc.sh" ]]; then
  (( major > 26 || (major == 26 && minor >= 2) )) && has_metadata=yes
  command=("${dry[@]}")
  [ -n "$providers" ] && [ "$1" != optimized ] && [ -n "$has_metadata" ] && command=("${metadata[@]}")
fi
code=0
out=""
if (( ${#command[@]} )); then
  out=$("$kc/bin/kc.sh" "${command[@]}" 2>&1); code=$?
  if [ "$code" != 0 ] && [[ "$out" == *"Unknown option: '--dry-run'"* ]]; then
    command=(); code=0; out=""
    if [ -n "$has_metadata" ]; then
      command=("${metadata[@]}")
      out=$("$kc/bin/kc.sh" "${command[@]}" 2>&1); code=$?
    fi
  fi
fi
rebuild=""
changed=()
if [ "$code" = 0 ] && [ "${command[*]}" = "start --dry-run" ]; then
  rebuild=no
  listing=""
  while IFS= read -r l; do
    case $l in
      *"Changes detected in configuration"*) rebuild=yes; listing="" ;;
      *"will be overridden with the following build options:"*) listing=yes ;;
      *)
        if [ -n "$listing" ] && [[ "$l" =~ ^[[:space:]]*-\ (.+)$ ]]; then
          # `option=image's value > option=pods' value`: only the image's side is kept (the pods' is the
          # operator's own rendering, and may come from a Secret).
          c=${BASH_REMATCH[1]}; c=${c%% > "${c%%=*}"=*}
          (( ${#changed[@]} < __CHANGED__ )) && changed+=("${c:0:__CHANGE__}")
        else
          listing=""
        fi ;;
    esac
  done <<< "$out"
fi
shown=()
for a in "${command[@]}"; do [[ "$a" == --file=* ]] || shown+=("$a"); done
{
  printf 'version-txt: %s\ncore-jar: %s\n' "$txt" "$jar"
  printf 'rebuild: %s\n' "$rebuild"
  for c in "${changed[@]}"; do printf 'changed: %s\n' "$c"; done
  printf 'command: %s\nexit: %s\n---\n' "${shown[*]}" "$code"
  if [ "$code" != 0 ]; then
    mapfile -t lines <<< "$out"
    first=$(( ${#lines[@]} > __TAIL__ ? ${#lines[@]} - __TAIL__ : 0 ))
    for l in "${lines[@]:first}"; do printf '%s\n' "${l:0:__LINE__}"; done
  fi
} > /dev/termination-log
exit "$code"
""".replace("__DIR__", DIR)
    .replace("__TAIL__", str(TAIL_LINES))
    .replace("__LINE__", str(LINE_MAX))
    .replace("__CHANGED__", str(CHANGED_MAX))
    .replace("__CHANGE__", str(CHANGE_MAX))
)


def start_of(pod: dict[str, Any]) -> Start:
    """How the pods of pod spec `pod` start: `optimized` from the image's own build (`start --optimized`
    with no build init container), else `build` (`start` builds, or an init container builds with
    providers the preflight does not have, so the image's own build is not what they run)."""
    keycloak: dict[str, Any] = next(
        (c for c in pod.get("containers") or [] if c.get("name") == "keycloak"), {}
    )
    builds = any(c.get("name") == pod_extensions.BUILD_CONTAINER for c in pod.get("initContainers") or [])
    return "optimized" if "--optimized" in (keycloak.get("args") or []) and not builds else "build"


def command_line(start: Start) -> list[str]:
    """The preflight container's command."""
    return ["/bin/bash", "-c", SCRIPT, "preflight", start]


@dataclass(frozen=True)
class Report:
    """What the script wrote."""

    version: str  # the image's Keycloak version, "" when its files name none
    checked: bool  # a configuration check ran
    exit: int | None  # its exit code (0 when none ran); None when the report is unreadable
    tail: tuple[str, ...] = ()  # the command's last lines, on a failure
    command: str = ""  # the kc.sh command that checked it ("" when none ran)
    # Keycloak's own answer to "does the pods' start build first?", from `start --dry-run`: it prints
    # "Changes detected in configuration" exactly when it would (None: not asked, another command ran).
    rebuild: bool | None = None
    # And, for an image built by `kc.sh build`, the build options a start would change, with the image's
    # values (bounded list).
    changed: tuple[Change, ...] = ()


@dataclass(frozen=True)
class Change:
    """A build option a start would change, with its value in the image's build (None: unset there)."""

    option: str
    image: str | None


_OPTION: Final = re.compile(r"^[a-z0-9]+([.-]{1,2}[a-z0-9]+)*$")
_UNSET: Final = "<unset>"


def parse_change(text: str) -> Change | None:
    """`option=value` as the script keeps Keycloak's `option=old > option=new` (`<unset>`: none); None for
    anything else."""
    option, eq, value = text.partition("=")
    if not eq or len(option) > 200 or not _OPTION.fullmatch(option):
        return None
    return Change(option, None if value == _UNSET else value)


def parse_report(message: str) -> Report | None:
    """The script's termination message; None when it is not one (a pod killed before writing it, or the
    kubelet's fallback to the log). The image wrote it: every field is bounded."""
    head, sep, tail = message.partition("\n---\n")
    if not sep and not message.rstrip().endswith("---"):
        return None
    fields = {}
    changes: list[Change] = []
    for line in head.splitlines():
        key, colon, value = line.partition(":")
        if not colon:
            continue
        if key.strip() == "changed":
            change = parse_change(value.strip()[:CHANGE_MAX])
            if change is not None and len(changes) < CHANGED_MAX:
                changes.append(change)
        else:
            fields[key.strip()] = value.strip()
    if "exit" not in fields or not re.fullmatch(r"-?\d{1,3}", fields["exit"]):
        return None
    version = read_version(fields.get("core-jar", ""), fields.get("version-txt", ""))
    lines = tuple(line[:LINE_MAX] for line in tail.splitlines() if line.strip())[-TAIL_LINES:]
    command = fields.get("command", "")[:_COMMAND_MAX]
    rebuild = {"yes": True, "no": False}.get(fields.get("rebuild", ""))
    return Report(
        version,
        bool(command),
        int(fields["exit"]),
        lines,
        command,
        rebuild,
        tuple(changes) if rebuild else (),
    )


def read_version(core_jar: str, version_txt: str) -> str:
    """The image's Keycloak version: the core jar's (what runs), else version.txt's last word; "" when
    neither is a version."""
    for candidate in (core_jar.strip(), (version_txt.split() or [""])[-1]):
        if parse_semver(candidate) is not None:
            return candidate
    return ""
