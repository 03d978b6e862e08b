"""The image recipe (core/image_recipe.py): a Containerfile deriving from spec.image with one exec-form
`kc.sh build` of exactly the pods' build options, whatever their values hold; refused where no image build
could be used or proved."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import build_options, image_recipe
from keycloak_operator.core.build_options import BuildOptions
from keycloak_operator.core.images import parse_semver
from tests.unit import builders

IMAGE = builders.IMAGE


def run_line(text: str) -> list[str]:
    (line,) = [line for line in text.splitlines() if line.startswith("RUN ")]
    parsed = json.loads(line.removeprefix("RUN "))
    assert isinstance(parsed, list)
    return [str(p) for p in parsed]


def test_the_recipe_derives_from_the_image_and_builds_with_the_pods_options() -> None:
    pod = builders.pod(builders.spec(features={"enabled": ["scripts"]}))
    options = build_options.of_pod(pod, parse_semver("26.7.3"))
    text = image_recipe.containerfile("ns/kc", IMAGE, options)
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines[0] == f"FROM {IMAGE}"
    command = run_line(text)
    assert command[:2] == ["/opt/keycloak/bin/kc.sh", "build"]
    assert command[2:] == [f"--{k}={v}" for k, v in options.values]
    assert "--db=postgres" in command and "--features=scripts" in command
    assert len(lines) == 2


@given(st.text(max_size=60))
def test_any_value_stays_one_argument_of_one_instruction(value: str) -> None:
    text = image_recipe.containerfile("ns/kc", IMAGE, BuildOptions((("features", value),)))
    assert len([line for line in text.splitlines() if not line.startswith("#")]) == 2
    assert run_line(text)[2] == f"--features={value}"


def test_options_from_secrets_are_refused_by_name() -> None:
    with pytest.raises(image_recipe.RecipeRefused, match="features, vault"):
        image_recipe.containerfile("ns/kc", IMAGE, BuildOptions((), ("features", "vault")))


def test_pods_that_build_at_start_need_no_recipe() -> None:
    with pytest.raises(image_recipe.RecipeRefused, match="init container"):
        image_recipe.containerfile("ns/kc", IMAGE, BuildOptions(), builds_at_start=True)


@pytest.mark.parametrize("image", ["a b", "x\nRUN rm -rf /", "", "x'y", 'x"y'])
def test_an_image_that_is_no_plain_reference_is_refused(image: str) -> None:
    with pytest.raises(image_recipe.RecipeRefused, match=r"spec\.image"):
        image_recipe.containerfile("ns/kc", image, BuildOptions())
