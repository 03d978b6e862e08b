"""The preflight's script (core/preflight_script.py): which kc.sh command it runs for each image and start,
its fallbacks, the report it writes, the version reader, and how the pods' start is read from their spec.

The script runs here on a fake distribution whose kc.sh records its arguments and answers as told."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import preflight_script as ps
from tests.unit import builders

NEW = "quay.io/keycloak/keycloak:26.7.3"
PROVIDER = {"name": "audit", "image": "registry.example/acme/audit:1.2", "path": "/opt/audit/jars"}

needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

# kc.sh stand-in: records "$*", then answers `--dry-run` as $DRY says (ok, refuse, unknown) and anything
# else as $OTHER says (ok, refuse, broken).
FAKE_KC = r"""#!/bin/bash
printf '%s\n' "$*" >> "$CALLS"
answer=$OTHER
[[ " $* " == *" --dry-run "* ]] && answer=$DRY
case $answer in
  ok) echo "all good"; exit 0 ;;
  refuse) echo "Changes detected"; echo "'no-such-feature' is an unrecognized feature"; exit 2 ;;
  unknown) echo "Unknown option: '--dry-run'"; echo "Try 'kc.sh start --help'"; exit 2 ;;
  broken) echo "ERROR: Provider com.example.Missing not found"; exit 1 ;;
  rebuild) printf '%s\n' "$REBUILD"; exit 0 ;;
esac
"""


@dataclass
class Run:
    code: int
    calls: list[str]
    report: ps.Report | None


def distribution(
    tmp_path: Path, version: str = "26.7.3", providers: bool = False, kc_sh: bool = True
) -> Path:
    home = tmp_path / "kc"
    (home / "lib/lib/main").mkdir(parents=True)
    (home / "bin").mkdir()
    (home / "providers").mkdir()
    (home / "providers/README.md").write_text("not a provider")
    if version:
        (home / "version.txt").write_text(f"Keycloak - Version {version}\n")
        (home / f"lib/lib/main/org.keycloak.keycloak-core-{version}.jar").write_text("")
    if providers:
        (home / "providers/audit.jar").write_text("")
    if kc_sh:
        kc = home / "bin/kc.sh"
        kc.write_text(FAKE_KC)
        kc.chmod(0o755)
    return home


def run(home: Path, start: ps.Start, dry: str = "ok", other: str = "ok", rebuild: str = "") -> Run:
    log, calls = home.parent / "termination-log", home.parent / "calls"
    script = ps.SCRIPT.replace("kc=/opt/keycloak", f"kc={home}").replace("/dev/termination-log", str(log))
    env = {"PATH": "/usr/bin:/bin", "CALLS": str(calls), "DRY": dry, "OTHER": other, "REBUILD": rebuild}
    done = subprocess.run(
        ["bash", "-c", script, "preflight", start], capture_output=True, text=True, check=False, env=env
    )
    recorded = calls.read_text().splitlines() if calls.exists() else []
    return Run(done.returncode, recorded, ps.parse_report(log.read_text()))


METADATA = f"update-compatibility metadata --file={ps.DIR}/metadata.json"


# Which command: the cheapest that proves what the pods' own start would


@needs_bash
@pytest.mark.parametrize(
    ("start", "providers", "command"),
    [
        # No provider in the image: validating the pods' start is all a build could add to (measured: the
        # dry run refuses what the build refuses, in 2-4 s instead of a minute).
        ("build", False, "start --dry-run"),
        ("optimized", False, "start --optimized --dry-run"),
        # The image's own providers load only in a build: the pods' `start` builds, so does the check.
        ("build", True, METADATA),
        # Pods started --optimized run the image's own build as it is: no build to prove.
        ("optimized", True, "start --optimized --dry-run"),
    ],
)
def test_the_command_is_the_pods_start_validated_or_a_build_when_the_image_has_providers(
    tmp_path: Path, start: ps.Start, providers: bool, command: str
) -> None:
    result = run(distribution(tmp_path, providers=providers), start)
    assert result.calls == [command]
    shown = command.replace(f" --file={ps.DIR}/metadata.json", "")
    assert result.code == 0
    # Only the pods' own `start`, validated, answers whether that start would build first.
    rebuild = False if shown == "start --dry-run" else None
    assert result.report == ps.Report("26.7.3", True, 0, (), shown, rebuild)


@needs_bash
@pytest.mark.parametrize(("providers", "dry", "other"), [(False, "refuse", "ok"), (True, "ok", "refuse")])
def test_a_refused_configuration_exits_with_keycloaks_code_and_last_lines(
    tmp_path: Path, providers: bool, dry: str, other: str
) -> None:
    result = run(distribution(tmp_path, providers=providers), "build", dry=dry, other=other)
    assert result.code == 2
    assert result.report is not None
    assert (result.report.exit, result.report.checked) == (2, True)
    assert result.report.tail == ("Changes detected", "'no-such-feature' is an unrecognized feature")


@needs_bash
def test_a_provider_that_breaks_the_build_fails_the_check(tmp_path: Path) -> None:
    result = run(distribution(tmp_path, providers=True), "build", other="broken")
    assert result.code == 1 and result.report is not None
    assert result.report.tail == ("ERROR: Provider com.example.Missing not found",)
    assert result.report.command == "update-compatibility metadata"


@needs_bash
@pytest.mark.parametrize(
    ("start", "fallback"),
    [("build", METADATA), ("optimized", f"{METADATA} --optimized")],
)
def test_where_dry_run_is_unknown_from_26_2_the_metadata_command_checks(
    tmp_path: Path, start: ps.Start, fallback: str
) -> None:
    result = run(distribution(tmp_path), start, dry="unknown")
    assert result.calls[1:] == [fallback]
    assert result.report is not None and (result.report.exit, result.report.checked) == (0, True)


@needs_bash
@pytest.mark.parametrize("providers", [False, True])
def test_where_dry_run_is_unknown_before_26_2_nothing_is_checked(tmp_path: Path, providers: bool) -> None:
    """25.0.6 answers "Unknown option: '--dry-run'" (run on its distribution) and has no metadata command:
    the version is still read, and the answer says the configuration was not checked."""
    result = run(distribution(tmp_path, "25.0.6", providers=providers), "build", dry="unknown")
    assert result.calls == ["start --dry-run"]
    assert result.code == 0
    assert result.report == ps.Report("25.0.6", False, 0, (), "")


@needs_bash
def test_providers_before_26_2_get_the_dry_run_that_version_may_have(tmp_path: Path) -> None:
    result = run(distribution(tmp_path, "26.1.4", providers=True), "build")
    assert result.calls == ["start --dry-run"]
    assert result.report == ps.Report("26.1.4", True, 0, (), "start --dry-run", False)


@needs_bash
@pytest.mark.parametrize(("version", "kc_sh"), [("", True), ("26.7.3", False)])
def test_no_version_or_no_kc_sh_runs_nothing(tmp_path: Path, version: str, kc_sh: bool) -> None:
    result = run(distribution(tmp_path, version, kc_sh=kc_sh), "build")
    assert result.calls == []
    assert result.code == 0
    assert result.report == ps.Report(version, False, 0, (), "")


@needs_bash
def test_a_long_output_is_cut_to_its_last_lines_each_bounded(tmp_path: Path) -> None:
    home = distribution(tmp_path)
    (home / "bin/kc.sh").write_text(
        "#!/bin/bash\nfor i in $(seq 1 30); do printf 'line %s %0500d\\n' $i 0; done\nexit 2\n"
    )
    result = run(home, "build")
    assert result.report is not None and len(result.report.tail) == ps.TAIL_LINES
    assert result.report.tail[-1].startswith("line 30 ")
    assert all(len(line) <= ps.LINE_MAX for line in result.report.tail)


# Whether the pods' start builds first: Keycloak's own answer, from the dry run of that start

# What `kc.sh start --dry-run` prints when the image's build differs from the options it is given
# (AbstractAutoBuildCommand.runReAugmentation; the list only for an image `kc.sh build` made).
REBUILDS_AFTER_A_BUILD = """Changes detected in configuration. Updating the server image.
The previous optimized build will be overridden with the following build options:
\t- db=dev-file > db=postgres
\t- features=<unset> > features=scripts
\t- metrics-enabled=true > metrics-enabled=<unset>
To avoid that, run the 'build' command again and then start the optimized server instance using the \
'--optimized' flag.
Next time you run the server, just run:

\tkc.sh start --optimized
"""


@needs_bash
def test_the_options_a_start_would_change_are_reported_as_keycloak_names_them(tmp_path: Path) -> None:
    result = run(distribution(tmp_path), "build", dry="rebuild", rebuild=REBUILDS_AFTER_A_BUILD)
    assert result.code == 0 and result.report is not None
    assert result.report.rebuild is True
    assert result.report.changed == (
        ps.Change("db", "dev-file"),
        ps.Change("features", None),
        ps.Change("metrics-enabled", "true"),
    )
    # The pods' values are the operator's own rendering (and may come from a Secret): never reported.
    log = (tmp_path / "termination-log").read_text()
    assert "postgres" not in log and "scripts" not in log


@needs_bash
def test_an_image_never_built_rebuilds_with_no_list(tmp_path: Path) -> None:
    text = "Changes detected in configuration. Updating the server image.\nNext time you run the server..."
    result = run(distribution(tmp_path), "build", dry="rebuild", rebuild=text)
    assert result.report is not None and (result.report.rebuild, result.report.changed) == (True, ())


@needs_bash
def test_the_list_is_bounded_in_entries_and_length(tmp_path: Path) -> None:
    many = "\n".join(f"\t- spi-x{i}--provider={'a' * 400} > spi-x{i}--provider=b" for i in range(40))
    text = (
        f"Changes detected in configuration.\nwill be overridden with the following build options:\n{many}\n"
    )
    result = run(distribution(tmp_path), "build", dry="rebuild", rebuild=text)
    assert result.report is not None and result.report.rebuild is True
    assert len(result.report.changed) == ps.CHANGED_MAX
    assert all(len(f"{c.option}={c.image}") <= ps.CHANGE_MAX for c in result.report.changed)
    log = (tmp_path / "termination-log").read_text()
    assert len(log.encode()) < 4096
    assert log.count("changed: ") == ps.CHANGED_MAX


# How the pods start, read from their rendered spec


@pytest.mark.parametrize(
    ("spec", "start"),
    [
        ({}, "build"),
        ({"startOptimized": True}, "optimized"),
        # Extensions' providers: an init container builds, the pods start --optimized from that build,
        # which the preflight does not have: it checks the image as `start` would build it.
        ({"extensions": [PROVIDER]}, "build"),
        ({"extensions": [PROVIDER], "startOptimized": True}, "build"),
    ],
)
def test_the_start_is_read_from_the_pods_spec(spec: dict[str, Any], start: ps.Start) -> None:
    pod = builders.deployment(builders.spec(image=NEW, **spec))["spec"]["template"]["spec"]
    assert ps.start_of(pod) == start
    assert ps.command_line(start) == ["/bin/bash", "-c", ps.SCRIPT, "preflight", start]


# The report and the version reader


def report(exit_code: int, tail: str = "", command: str = "start --dry-run") -> str:
    return (
        f"version-txt: Keycloak - Version 26.7.3\ncore-jar: 26.7.3\ncommand: {command}\n"
        f"exit: {exit_code}\n---\n{tail}"
    )


def test_a_report_is_parsed() -> None:
    parsed = ps.parse_report(report(2, "line 1\nInvalid value for option 'KC_HTTP_PORT'\n"))
    assert parsed == ps.Report(
        "26.7.3", True, 2, ("line 1", "Invalid value for option 'KC_HTTP_PORT'"), "start --dry-run"
    )
    assert ps.parse_report(report(0, command="")) == ps.Report("26.7.3", False, 0, (), "")


@pytest.mark.parametrize(
    "text", ["", "exit: 0", "some log line\nanother", "version-txt: x\n---\n", "exit: x\n---\n"]
)
def test_what_is_not_a_report_is_none(text: str) -> None:
    assert ps.parse_report(text) is None


@given(st.text(max_size=400))
def test_any_termination_message_parses_or_is_none_and_stays_bounded(text: str) -> None:
    parsed = ps.parse_report(text)
    assert parsed is None or isinstance(parsed.exit, int)
    if parsed is not None:
        assert len(parsed.command) <= 80 and len(parsed.tail) <= ps.TAIL_LINES


@given(st.lists(st.text(max_size=300), max_size=40), st.sampled_from(["yes", "no", "", "maybe"]))
def test_any_changed_lines_parse_bounded_and_only_with_a_rebuild(lines: list[str], rebuild: str) -> None:
    head = "".join(f"changed: {line}\n" for line in lines if "\n" not in line and "\r" not in line)
    parsed = ps.parse_report(f"rebuild: {rebuild}\n{head}exit: 0\n---\n")
    assert parsed is not None
    assert parsed.rebuild == {"yes": True, "no": False}.get(rebuild)
    assert len(parsed.changed) <= ps.CHANGED_MAX
    assert not parsed.changed or parsed.rebuild is True
    for change in parsed.changed:
        assert len(change.option) <= ps.CHANGE_MAX


@pytest.mark.parametrize(
    ("text", "change"),
    [
        ("db=dev-file", ps.Change("db", "dev-file")),
        ("features=<unset>", ps.Change("features", None)),
        ("spi-x--provider=a=b", ps.Change("spi-x--provider", "a=b")),
        ("x=", ps.Change("x", "")),
        ("x", None),
        ("X=a", None),
        ("x y=a", None),
        ("=a", None),
        ("-x=a", None),
    ],
)
def test_a_change_is_parsed_or_dropped(text: str, change: ps.Change | None) -> None:
    assert ps.parse_change(text) == change


@pytest.mark.parametrize(
    ("jar", "txt", "version"),
    [
        ("26.7.3", "Keycloak - Version 26.7.3", "26.7.3"),
        ("", "Keycloak - Version 26.5.6", "26.5.6"),
        ("26.7.3", "Keycloak - Version 99.0.0", "26.7.3"),  # the jar is what runs
        ("", "", ""),
        ("*", "garbage", ""),  # the glob matched nothing
        ("26.7.3-SNAPSHOT", "", "26.7.3-SNAPSHOT"),
    ],
)
def test_the_version_comes_from_the_core_jar_then_version_txt(jar: str, txt: str, version: str) -> None:
    assert ps.read_version(jar, txt) == version
