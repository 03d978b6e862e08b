"""The upgrade planner: one test per row of its table, then properties over any pair of references."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import upgrade_plan as up

KC = "quay.io/keycloak/keycloak"


def image(ref: str) -> str:
    """A bare tag is Keycloak's image at that tag; anything with a colon or an @ is taken as written."""
    return ref if ":" in ref or "@" in ref or " " in ref else f"{KC}:{ref}"


def planned(old: str, new: str, **kw: object) -> up.Plan:
    return up.plan(up.PlanInput(image(old), image(new), **kw))  # type: ignore[arg-type]


# --- one test per row ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["Recreate", "BlueGreen"])
def test_same_image_is_no_upgrade(strategy: str) -> None:
    assert planned("26.7.3", "26.7.3", strategy=strategy).path == up.NONE


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [("26.7.3", "26.5.6", "minor"), ("26.0.0", "25.0.6", "major"), ("26.1.0", "26.0.9", "minor")],
)
@pytest.mark.parametrize("strategy", ["Recreate", "BlueGreen"])
@pytest.mark.parametrize("check", [None, 0, 3])
def test_going_back_to_an_older_line_is_refused_whatever_the_check_says(
    old: str, new: str, line: str, strategy: str, check: int | None
) -> None:
    p = planned(old, new, strategy=strategy, check_exit=check, copy_possible=True, allow_downtime=True)
    assert p.path == up.REFUSE
    assert f"older {line} line" in p.reason and "restore a backup taken before the upgrade" in p.reason


def test_a_patch_on_a_rolling_line_rolls() -> None:
    p = planned("26.7.0", "26.7.3")
    assert (p.path, p.compatible, p.zero_downtime) == (up.ROLL, True, True)
    assert "patch change on the 26.7 line, which Keycloak rolls" in p.reason


def test_a_patch_back_on_a_rolling_line_rolls() -> None:
    assert planned("26.7.3", "26.7.0").path == up.ROLL


def test_a_compatible_change_under_blue_green_shares_the_database() -> None:
    p = planned("26.7.0", "26.7.3", strategy="BlueGreen")
    assert (p.path, p.zero_downtime) == (up.BLUE_GREEN_SHARED, True)
    assert "same database" in p.reason


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("26.5.6", "26.7.3", "minor change"),
        ("25.0.6", "26.5.6", "major change"),
        ("26.4.7", "26.4.8", "Keycloak rolls patch releases only from 26.6 on"),
        ("26.7.0", "26.7.3-rc1", "pre-release"),
        ("26.7.0", "latest", "wanted image's tag names no fixed release"),
        (f"{KC}@sha256:{'a' * 64}", "26.7.3", "running image's tag names no fixed release"),
        ("26.7.0", "example.com/my/keycloak:26.7.3", "different repositories"),
        ("26.7.0", "Not An Image", "different repositories"),
    ],
)
def test_an_incompatible_change_under_the_default_strategy_recreates(old: str, new: str, why: str) -> None:
    p = planned(old, new)
    assert (p.path, p.compatible, p.zero_downtime) == (up.RECREATE, False, False)
    assert why in p.reason and "every old pod stops before the first new one starts" in p.reason


def test_an_incompatible_change_under_blue_green_with_a_copy_takes_the_copy() -> None:
    p = planned("26.5.6", "26.7.3", strategy="BlueGreen", copy_possible=True)
    assert (p.path, p.zero_downtime) == (up.BLUE_GREEN_COPY, True)
    assert "copy of the database" in p.reason and "do not reach green" in p.reason


def test_an_incompatible_change_under_blue_green_without_a_copy_recreates_when_downtime_is_allowed() -> None:
    p = planned("26.5.6", "26.7.3", strategy="BlueGreen", allow_downtime=True)
    assert (p.path, p.zero_downtime) == (up.RECREATE, False)
    assert "allowDowntime is set" in p.reason


def test_an_incompatible_change_under_blue_green_without_a_copy_or_downtime_is_refused() -> None:
    p = planned("26.5.6", "26.7.3", strategy="BlueGreen")
    assert p.path == up.REFUSE
    assert "minor change" in p.reason and "set upgradePolicy.allowDowntime" in p.reason
    assert "Set upgradePolicy.databaseCopy" in p.reason


# --- the compatibility check --------------------------------------------------------------------------------


def test_check_exit_0_makes_a_minor_change_compatible() -> None:
    p = planned("26.5.6", "26.7.3", check_exit=0)
    assert p.path == up.ROLL and "exit 0" in p.reason


def test_check_exit_3_makes_a_rolling_patch_incompatible() -> None:
    p = planned("26.7.0", "26.7.3", check_exit=3)
    assert p.path == up.RECREATE and "exit 3" in p.reason


@pytest.mark.parametrize(
    ("code", "said"), [(1, "exit 1"), (2, "exit 2"), (4, "disabled (exit 4)"), (9, "exited 9")]
)
def test_other_check_exits_fall_back_to_the_version_rule(code: int, said: str) -> None:
    rolling, minor = (
        planned("26.7.0", "26.7.3", check_exit=code),
        planned("26.5.6", "26.7.3", check_exit=code),
    )
    assert (rolling.path, minor.path) == (up.ROLL, up.RECREATE)
    assert said in rolling.reason and "the version rule decides" in rolling.reason


# --- properties ---------------------------------------------------------------------------------------------

TAGS = st.one_of(
    st.builds(lambda a, b, c: f"{a}.{b}.{c}", st.integers(24, 28), st.integers(0, 8), st.integers(0, 9)),
    st.sampled_from(["latest", "nightly", "26", "26.7", "26.7.3-rc1", "v26.7.3"]),
)
IMAGES = st.one_of(st.builds(lambda t: f"{KC}:{t}", TAGS), st.text(max_size=40))
INPUTS = st.builds(
    up.PlanInput,
    running_image=IMAGES,
    wanted_image=IMAGES,
    strategy=st.sampled_from(["Recreate", "BlueGreen"]),
    copy_possible=st.booleans(),
    allow_downtime=st.booleans(),
    check_exit=st.one_of(st.none(), st.integers(-1, 5)),
)


@given(INPUTS)
def test_every_input_gets_exactly_one_known_path_and_a_reason(given_input: up.PlanInput) -> None:
    p = up.plan(given_input)
    assert p.path in up.PATHS and p.reason


@given(INPUTS)
def test_nothing_incompatible_ever_runs_beside_the_old_version(given_input: up.PlanInput) -> None:
    """Old and new side by side on one database only when compatible; without downtime only if allowed."""
    p = up.plan(given_input)
    if p.path in (up.ROLL, up.BLUE_GREEN_SHARED):
        assert p.compatible
    if p.path == up.RECREATE and given_input.strategy == "BlueGreen":
        assert given_input.allow_downtime
    if p.path == up.BLUE_GREEN_COPY:
        assert given_input.copy_possible and given_input.strategy == "BlueGreen"


@given(INPUTS)
def test_blue_green_never_recreates_unasked_and_the_default_never_copies(given_input: up.PlanInput) -> None:
    p = up.plan(given_input)
    if given_input.strategy == "Recreate":
        assert p.path in (up.NONE, up.ROLL, up.RECREATE, up.REFUSE)
    else:
        assert p.path != up.ROLL


@given(st.integers(24, 28), st.integers(0, 8), st.integers(24, 28), st.integers(0, 8), INPUTS)
def test_refused_exactly_for_an_older_line_or_blue_green_with_no_way_without_downtime(
    a: int, b: int, c: int, d: int, given_input: up.PlanInput
) -> None:
    wanted = up.PlanInput(
        f"{KC}:{a}.{b}.0",
        f"{KC}:{c}.{d}.0",
        given_input.strategy,
        given_input.copy_possible,
        given_input.allow_downtime,
        given_input.check_exit,
    )
    p = up.plan(wanted)
    older = (c, d) < (a, b)
    stuck = wanted.strategy == "BlueGreen" and not (
        p.compatible or wanted.copy_possible or wanted.allow_downtime
    )
    assert (p.path == up.REFUSE) == (older or stuck)


# --- what `keycloak-operator plan` prints -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "policy", "path", "effect"),
    [
        ("26.7.0", "26.7.3", {}, up.ROLL, "sign-ins keep working"),
        ("26.7.0", "26.7.3", {"strategy": "BlueGreen"}, up.BLUE_GREEN_SHARED, "same database"),
        ("26.5.6", "26.7.3", {}, up.RECREATE, "DOWNTIME"),
        ("26.5.6", "26.7.3", {"strategy": "BlueGreen", "copy_possible": True}, up.BLUE_GREEN_COPY, "a copy"),
        ("26.7.3", "26.5.6", {}, up.REFUSE, "nothing changes"),
        ("26.7.3", "26.7.3", {}, up.NONE, "no upgrade"),
    ],
)
def test_the_summary_names_the_path_its_effect_on_sign_ins_and_why(
    old: str, new: str, policy: dict, path: str, effect: str
) -> None:
    p = planned(old, new, **policy)
    text = up.summary(p, image(old), image(new))
    lines = dict(line.split(None, 1) for line in text.splitlines())
    assert lines["running"] == image(old) and lines["wanted"] == image(new)
    assert lines["path"] == path and effect in lines["effect"] and lines["why"] == p.reason


def test_nothing_running_yet_is_no_upgrade() -> None:
    p = up.first_creation()
    assert p.path == up.NONE and "first start" in up.summary(p, "", image("26.7.3"))


def test_the_summary_adds_the_check_and_the_last_measured_figure_when_known() -> None:
    p = planned("26.5.6", "26.7.3")
    text = up.summary(p, image("26.5.6"), image("26.7.3"), check="Job kc-compat-1: x", last="measured y")
    lines = dict(line.split(None, 1) for line in text.splitlines())
    assert lines["check"] == "Job kc-compat-1: x" and lines["measured"] == "measured y"
    assert "check" not in dict(line.split(None, 1) for line in up.summary(p, "a", "b").splitlines())


@pytest.mark.parametrize(
    ("path", "last", "downtime", "window", "says"),
    [
        (up.RECREATE, up.RECREATE, 37, None, "no ready pod for 37 s"),
        (up.BLUE_GREEN_COPY, up.BLUE_GREEN_COPY, None, 72, "write window of 72 s"),
        (up.RECREATE, up.BLUE_GREEN_COPY, 37, 72, ""),  # another path's figure says nothing about this one
        (up.RECREATE, up.RECREATE, None, None, ""),  # not measured (yet)
        (up.ROLL, up.ROLL, 5, 5, ""),  # nothing to measure
    ],
)
def test_the_last_figure_is_quoted_only_for_the_same_path(
    path: str, last: str, downtime: int | None, window: int | None, says: str
) -> None:
    text = up.measured(path, last, downtime, window)
    assert (says in text) if says else text == ""
