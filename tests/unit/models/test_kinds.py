"""The registry of replicated kinds (models/kinds.py, ADR 0030): what every loop over it relies on."""

from __future__ import annotations

from keycloak_operator.kernel import names
from keycloak_operator.models import crd
from keycloak_operator.models.kinds import BY_KIND, REPLICATED
from keycloak_operator.models.rbac import PERMISSIONS


def test_each_kind_is_declared_once_with_names_of_its_own() -> None:
    for field in ("kind", "plural", "short_name", "what"):
        values = [getattr(k, field) for k in REPLICATED]
        assert len(values) == len(set(values)), field
    assert set(BY_KIND) == {k.kind for k in REPLICATED}
    assert all(k.plural == k.kind.lower() + "s" for k in REPLICATED)


def test_the_realm_comes_first_and_every_other_kind_names_its_realm() -> None:
    assert REPLICATED[0].kind == names.REALM_KIND and not REPLICATED[0].in_realm
    for kind in REPLICATED[1:]:
        assert kind.in_realm and "realm" in kind.spec.model_fields, kind.kind


def test_every_kind_has_a_crd_with_status_and_age_last() -> None:
    generated = {c["spec"]["names"]["kind"]: c for c in crd.all_crds()}
    for kind in REPLICATED:
        version = generated[kind.kind]["spec"]["versions"][0]
        assert version["subresources"] == {"status": {}}
        assert version["additionalPrinterColumns"][-1]["name"] == "Age"
        assert "status" in version["schema"]["openAPIV3Schema"]["properties"]


def test_every_kind_is_granted_the_same_verbs_and_no_more() -> None:
    for kind in REPLICATED:
        granted = {p.resource: p.verbs for p in PERMISSIONS if p.group == names.GROUP}
        assert granted[kind.plural] == ("list", "watch", "patch")
        assert granted[f"{kind.plural}/status"] == ("patch",)


def test_every_kind_inside_a_realm_has_one_step_of_the_round_and_every_step_of_a_kind_reads_it() -> None:
    from keycloak_operator.shell.replication.kinds import STEPS

    stepped = [s.reads.kind.kind for s in STEPS if s.reads is not None]
    assert sorted(stepped) == sorted(k.kind for k in REPLICATED if k.in_realm)
    assert all(callable(s.reads.resource) for s in STEPS if s.reads is not None)
    assert all(s.reads.kind.in_realm for s in STEPS if s.reads is not None)  # the realm is no step's


def test_every_kind_is_watched_and_listed() -> None:
    from keycloak_operator.shell import replication_handlers
    from keycloak_operator.shell.replication import listing

    assert set(replication_handlers.ON_EVENT) == set(BY_KIND)
    assert [r.plural for r in listing.KINDS] == [k.plural for k in REPLICATED]
    assert {names.REALM_PLURAL, names.CLIENT_PLURAL} == listing.REQUIRED


# Every spec field name that can put something into a token (roles, groups, claims, audiences, scopes).
TOKEN_FIELD_NAMES = {
    "protocolMappers",
    "mappers",
    "composites",
    "serviceAccountRoles",
    "realmRoles",
    "clientRoles",
    "defaultRoles",
    "defaultGroups",
    "defaultClientScopes",
    "optionalClientScopes",
}


def _token_paths(node: object, path: str = "") -> list[str]:
    if not isinstance(node, dict):
        return []
    found: list[str] = []
    for name, child in (node.get("properties") or {}).items():
        where = f"{path}.{name}" if path else name
        found += [where] if name in TOKEN_FIELD_NAMES else []
        found += _token_paths(child, where)
    found += _token_paths(node.get("items"), f"{path}[]")
    found += _token_paths(node.get("additionalProperties"), f"{path}{{}}")
    return found


def test_every_field_that_reaches_a_token_is_declared_for_the_token_authority() -> None:
    for kind in REPLICATED:
        assert sorted(_token_paths(crd.structural_schema(kind.spec))) == sorted(kind.token_fields), kind.kind
