"""`keycloak-operator image-recipe NAME`: prints the Containerfile of an image built with exactly the build
options the operator renders for that Keycloak (core/image_recipe.py). Reads the Keycloak only; the pod is
rendered here as the operator renders it, for the release read from the image by its passed preflight, else
the one its tag names."""

from __future__ import annotations

from pydantic import ValidationError

from keycloak_operator.core import build_options, image_recipe, pod_extensions, preflight_gate
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.core.images import parse_semver, release_of
from keycloak_operator.core.reconcile import owner_of, stored_status
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.shell.cli_target import CommandError, Exit, Target, connected, keycloak_named


class NoRecipe(CommandError):
    """No recipe can be given (the answer is no); the message says why."""

    code = Exit.REFUSED


async def run(target: Target, name: str) -> str:
    namespace = target.namespace
    async with connected(target) as kube:
        keycloak = await keycloak_named(kube, target, name)
    try:
        spec = KeycloakSpec.model_validate(keycloak.get("spec") or {})
    except ValidationError as e:
        raise NoRecipe(f"the spec of Keycloak {namespace}/{name} is not valid: {e}") from e
    verified = preflight_gate.verified_version(stored_status(keycloak).preflight, spec.image)
    release = parse_semver(verified) if verified else release_of(spec.image)
    deployment = render_deployment(
        owner_of(keycloak), spec, image=spec.image, track=names.TRACKS[0], version=""
    )
    options = build_options.of_pod(deployment["spec"]["template"]["spec"], release)
    try:
        return image_recipe.containerfile(
            f"{namespace}/{name}", spec.image, options, builds_at_start=pod_extensions.needs_build(spec)
        )
    except image_recipe.RecipeRefused as e:
        raise NoRecipe(str(e)) from e
