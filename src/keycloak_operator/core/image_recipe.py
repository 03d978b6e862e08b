"""`keycloak-operator image-recipe NAME`: a Containerfile deriving from `spec.image` that bakes in exactly the
build-time options the operator renders for that Keycloak (core/build_options.py), so its pods can start
`--optimized` (ADR 0026).

One `RUN /opt/keycloak/bin/kc.sh build ...` in the exec (JSON) form: every option is one JSON string, so no
value, whatever the spec holds (quotes, `$`, a newline), reaches a shell or ends the instruction early. The
options are given on the command line: Keycloak persists an option's value whatever source gave it, and
compares values only, so `--db=postgres` at the build matches `KC_DB=postgres` in the pods.

Pure: the caller renders the pod and reads the Keycloak.
"""

from __future__ import annotations

import json
import re
from typing import Final

from keycloak_operator.core.build_options import BuildOptions

KC_SH: Final = "/opt/keycloak/bin/kc.sh"
# What a FROM line may carry: an image reference has no whitespace and no quote (the CRD's pattern says the
# same; checked again because this text becomes a build instruction).
_REFERENCE: Final = re.compile(r"^[A-Za-z0-9._/:@-]+$")


class RecipeRefused(Exception):
    """No recipe can be given; the message says why and what to do."""


def containerfile(keycloak: str, image: str, options: BuildOptions, *, builds_at_start: bool = False) -> str:
    """The Containerfile for Keycloak `keycloak` (namespace/name) running `image`, whose pods set `options`.
    `builds_at_start`: the pods build in an init container (provider extensions): no image build is used."""
    if builds_at_start:
        raise RecipeRefused(
            "spec.extensions has providers: every pod builds Keycloak in an init container with them, so a "
            "build baked into the image would not be used"
        )
    if options.unknown:
        raise RecipeRefused(
            f"build-time options {', '.join(options.unknown)} take their values from a Secret or ConfigMap: "
            "the operator cannot know them, so no image can be proved to match; set them as values "
            "(spec.additionalOptions[].value) to have a recipe"
        )
    if not _REFERENCE.fullmatch(image):
        raise RecipeRefused(f"spec.image {json.dumps(image)} is not a plain image reference")
    command = [KC_SH, "build", *(f"--{name}={value}" for name, value in options.values)]
    return (
        f"# Keycloak {keycloak}: the build-time options its pods set, baked in by kc.sh build, so the\n"
        "# operator starts its pods --optimized (keycloak-operator image-recipe).\n"
        f"FROM {image}\n"
        f"RUN {json.dumps(command)}\n"
    )
