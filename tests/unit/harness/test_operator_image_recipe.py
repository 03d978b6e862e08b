"""The operator image has two recipes: the root Dockerfile, for users with a container engine, and
hack/build-operator-image.sh, which assembles the same image here without one (ADR 0015). Each declares the
same facts in one place (the script: the block between its "The image" and "end of the facts" rulers; the
Dockerfile: its two stages). This reads both and names every fact on which they differ."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from localcluster import app_images

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "hack" / "build-operator-image.sh"
DOCKERFILE = ROOT / "Dockerfile"


# ---- the script's facts ----------------------------------------------------------------------------------
def script_facts(text: str) -> dict[str, Any]:
    """The variables of the script's facts block: strings, `build_env` as a list, `config` as parsed JSON."""
    start = text.index("# ---- The image.")
    block = text[start : text.index("# ---- end of the facts", start)]
    heredoc = re.search(r"^config=\$\(cat <<'EOF'\n(.*?)\nEOF\n\)", block, re.DOTALL | re.MULTILINE)
    assert heredoc, "the script's facts block has no config=$(cat <<'EOF' ... EOF) heredoc"
    facts: dict[str, Any] = {"config": json.loads(heredoc.group(1))}
    rest = block[: heredoc.start()] + block[heredoc.end() :]
    for array in re.finditer(r"^(\w+)=\((.*?)\)", rest, re.DOTALL | re.MULTILINE):
        facts[array.group(1)] = shlex.split(array.group(2), comments=True)
    for line in rest.splitlines():
        scalar = re.match(r"^(\w+)=(?!\()(.*)$", line)
        if scalar:
            facts[scalar.group(1)] = shlex.split(scalar.group(2), comments=True)[0]
    return facts


# ---- the Dockerfile's ------------------------------------------------------------------------------------
@dataclass
class Stage:
    base: str
    runs: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    copies: list[list[str]] = field(default_factory=list)
    user: str | None = None
    entrypoint: Any = None
    cmd: Any = None


def dockerfile_stages(text: str) -> list[Stage]:
    """The Dockerfile's stages with what each declares (continuation lines joined, comments dropped)."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    stages: list[Stage] = []
    for instruction in "\n".join(lines).replace("\\\n", " ").splitlines():
        if not instruction.strip():
            continue
        keyword, _, args = instruction.strip().partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "FROM":
            stages.append(Stage(base=args.split()[0]))
            continue
        assert stages, f"Dockerfile: {keyword} before any FROM"
        stage = stages[-1]
        if keyword == "RUN":
            stage.runs.append(" ".join(args.split()))
        elif keyword == "ENV":
            stage.env.update(dict(token.split("=", 1) for token in shlex.split(args)))
        elif keyword == "COPY":
            stage.copies.append(args.split())
        elif keyword == "USER":
            stage.user = args
        elif keyword == "ENTRYPOINT":
            stage.entrypoint = json.loads(args)
        elif keyword == "CMD":
            stage.cmd = json.loads(args)
    return stages


def commands(stage: Stage) -> list[str]:
    """Every shell command the stage's RUN lines run, split at &&, in order."""
    return [part.strip() for run in stage.runs for part in run.split("&&")]


def installed_packages(stage: Stage) -> list[str]:
    found: list[str] = []
    for command in commands(stage):
        words = command.split()
        if words[:2] == ["apt-get", "install"]:
            found += [w for w in words[2:] if not w.startswith("-")]
    return found


def appended_lines(stage: Stage, path: str) -> list[str]:
    """The lines a stage appends to `path` with `echo '...' >> path`."""
    lines = []
    for command in commands(stage):
        words = shlex.split(command)
        if words[:1] == ["echo"] and words[-2:] == [">>", path]:
            lines.append(" ".join(words[1:-2]))
    return lines


# ---- the comparison --------------------------------------------------------------------------------------
def differences(script_text: str, dockerfile_text: str, makefile_text: str) -> list[str]:
    """One sentence per fact on which the two recipes (and the Makefile's uv) disagree."""
    s = script_facts(script_text)
    stages = dockerfile_stages(dockerfile_text)
    found: list[str] = []

    def differ(what: str, dockerfile: Any, script: Any) -> None:
        if isinstance(dockerfile, dict) and isinstance(script, dict):
            for key in sorted(dockerfile.keys() | script.keys()):
                differ(f"{what} {key}", dockerfile.get(key), script.get(key))
        elif dockerfile != script:
            found.append(f"{what}: the Dockerfile has {dockerfile!r}, the script has {script!r}")

    if len(stages) != 2:
        return [f"the Dockerfile has {len(stages)} stages; this test reads two (build, then run)"]
    build, run = stages
    for name, stage in (("build", build), ("run", run)):
        differ(f"the {name} stage's base", stage.base.split(" ")[0], f"debian:{s['suite']}-slim")
    differ("the packages installed in the run stage", installed_packages(run), s["packages"].split(","))

    pinned = re.findall(r"\buv==(\S+)", " ".join(build.runs))
    differ("the uv version", pinned, [s["uv_version"]])
    make = re.search(r"^UV_VERSION\s*:?=\s*(\S+)", makefile_text, re.MULTILINE)
    if not make or make.group(1) != s["uv_version"]:
        found.append(
            f"the uv version: the Makefile has {make and make.group(1)!r}, "
            f"hack/build-operator-image.sh has {s['uv_version']!r}"
        )
    build_env = dict(e.split("=", 1) for e in s["build_env"])
    differ("the build environment", {k: build.env.get(k) for k in build_env}, build_env)
    uv_runs = [c for c in commands(build) if c.startswith("uv ")]
    differ("the installs (uv commands, in order)", uv_runs, [s["sync_dependencies"], s["sync_project"]])
    sources = [copy[:-1] for copy in build.copies if any(path.startswith("src") for path in copy[:-1])]
    differ("the source copied for the wheel", sources, [["src/keycloak_operator"]])
    compiles = [c for c in commands(run) if "compileall" in c]
    differ("the stdlib byte-code step", compiles, [s["compile_stdlib"]])
    differ("the passwd entry", appended_lines(run, "/etc/passwd"), [s["passwd"]])
    differ("the group entry", appended_lines(run, "/etc/group"), [s["group"]])

    config = s["config"]
    differ("USER", run.user, config.get("User"))
    differ("ENTRYPOINT", run.entrypoint, config.get("Entrypoint"))
    differ("CMD", run.cmd, config.get("Cmd"))
    differ("ENV", run.env, dict(e.split("=", 1) for e in config.get("Env", [])))
    return found


def test_the_dockerfile_and_the_script_declare_the_same_image() -> None:
    found = differences(SCRIPT.read_text(), DOCKERFILE.read_text(), (ROOT / "Makefile").read_text())
    assert not found, "the Dockerfile and hack/build-operator-image.sh differ:\n" + "\n".join(found)


def test_a_change_to_one_recipe_alone_is_named() -> None:
    script, dockerfile, makefile = SCRIPT.read_text(), DOCKERFILE.read_text(), (ROOT / "Makefile").read_text()
    cases = [  # (the fact named, a line of the Dockerfile, what it is changed to)
        ("USER", "USER 65532:65532", "USER 1000:1000"),
        ("CMD", 'CMD ["run", "--all-namespaces"]', 'CMD ["run"]'),
        ("ENV", "PYTHONDONTWRITEBYTECODE=1", "PYTHONDONTWRITEBYTECODE=0"),
        ("base", "FROM debian:bookworm-slim\n", "FROM debian:trixie-slim\n"),
        ("the uv version", "uv==0.13.9", "uv==0.14.0"),
        ("the installs", "--no-editable", "--editable"),
        ("the source copied", "COPY src/keycloak_operator ./src/keycloak_operator", "COPY src ./src"),
        ("the packages", "--no-install-recommends python3 \\", "--no-install-recommends python3 tini \\"),
        ("the passwd entry", ":/nonexistent:", ":/home/nonroot:"),
    ]
    for fact, line, replacement in cases:
        assert line in dockerfile, f"the Dockerfile no longer has {line!r}: update this test's cases"
        changed = dockerfile.replace(line, replacement)
        assert any(fact in found for found in differences(script, changed, makefile)), fact
    changed_script = script.replace('"User": "65532:65532"', '"User": "65533:65533"')
    assert any("USER" in line for line in differences(changed_script, dockerfile, makefile))


def test_the_image_reference_is_the_charts_default() -> None:
    chart = ROOT / "deploy" / "helm" / "keycloak-operator"
    values = yaml.safe_load((chart / "values.yaml").read_text())
    app_version = yaml.safe_load((chart / "Chart.yaml").read_text())["appVersion"]
    assert app_images.operator_image_ref() == f"{values['image']['repository']}:{app_version}"
    # The script's default, when it is run by hand.
    default = re.search(r"^ref=\$\{1:-(.*?):\$\{app_version", SCRIPT.read_text(), re.MULTILINE)
    assert default and default.group(1) == values["image"]["repository"]
