"""Our kinds beside the other Keycloak operators' on one cluster: kubectl resolves a bare name or short name
to whichever group it finds first, so no short name of ours may be one of theirs, and the docs name a kind
whose plural or singular they share in full (`keycloaks.kcop.dev`), wherever a reader would type it."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
CRDS = [d for d in yaml.safe_load_all((ROOT / "deploy" / "crds" / "crds.yaml").read_text()) if d]

# The official operator (k8s.keycloak.org): Keycloak `kc`, KeycloakRealmImport. EDP's (v1.edp.epam.com).
OTHERS = {
    "k8s.keycloak.org": {"keycloaks", "keycloak", "kc", "keycloakrealmimports", "keycloakrealmimport"},
    "v1.edp.epam.com": {
        f"{kind}{plural}"
        for kind in (
            "keycloak",
            "keycloakrealm",
            "keycloakclient",
            "keycloakclientscope",
            "keycloakauthflow",
            "keycloakrealmgroup",
            "keycloakrealmrole",
            "keycloakrealmrolebatch",
            "keycloakrealmuser",
            "keycloakrealmidentityprovider",
            "keycloakrealmcomponent",
            "keycloakorganization",
            "clusterkeycloak",
            "clusterkeycloakrealm",
        )
        for plural in ("", "s")
    },
}
TAKEN = set().union(*OTHERS.values())
OURS = {d["spec"]["names"]["plural"]: d["spec"]["names"] for d in CRDS if d["spec"]["group"] == "kcop.dev"}
SHARED = {n for names in OURS.values() for n in (names["plural"], names["singular"]) if n in TAKEN}

KUBECTL = re.compile(
    r"kubectl\s+(?:get|describe|explain|edit|delete|patch|scale|wait|annotate|label)\b[^`\n|]*"
)
NAME = re.compile(r"(?<![\w.-])([a-z]+)(?=[\s,/.`]|$)(\.kcop\.dev\b)?")


def test_no_short_name_of_ours_is_a_name_of_theirs() -> None:
    ours = {s for names in OURS.values() for s in names.get("shortNames", [])}
    assert ours and not ours & TAKEN, ours & TAKEN


def test_the_shared_names_are_known() -> None:
    # Keycloak with both, KeycloakRealm, KeycloakClient and KeycloakClientScope with EDP's.
    assert {
        "keycloaks",
        "keycloak",
        "keycloakrealms",
        "keycloakrealm",
        "keycloakclients",
        "keycloakclient",
        "keycloakclientscopes",
        "keycloakclientscope",
    } == SHARED


def unqualified(text: str) -> list[str]:
    found = []
    for command in KUBECTL.finditer(text):
        for name in NAME.finditer(command.group(0)):
            if name.group(1) in SHARED and not name.group(2):
                found.append(command.group(0).strip())
    return found


def test_the_check_itself() -> None:
    assert unqualified("`kubectl describe keycloak NAME`") == ["kubectl describe keycloak NAME"]
    assert unqualified("kubectl get keycloakrealms,keycloakclients -n NS") != []
    assert unqualified("kubectl explain keycloak.spec") != []
    assert unqualified("kubectl scale keycloaks.kcop.dev/sample --replicas=5") == []
    assert unqualified("kubectl get keycloakrealms.kcop.dev,keycloakclients.kcop.dev -n NS") == []
    assert unqualified("kubectl get deployment keycloak-operator; kubectl get keycloakgroups") == []


def test_the_docs_qualify_every_shared_name() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
    wrong = [
        f"{page.relative_to(ROOT)}:{i}: {cmd}"
        for page in pages
        for i, line in enumerate(page.read_text().splitlines(), 1)
        for cmd in unqualified(line)
    ]
    assert wrong == [], "\n".join(wrong)
