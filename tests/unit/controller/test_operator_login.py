"""The operator's own login (core/operator_login.py): which Secret is used, which secrets are tried, what the
client in master must be, and a rotation's steps, each stored in Kubernetes before Keycloak is told."""

from __future__ import annotations

import base64
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import child_ownership, children, operator_login, reconcile
from keycloak_operator.core.operator_login import LoginSecret, Step
from keycloak_operator.kernel import names
from tests.unit.builders import NOW, OWNER, observed, spec


def b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def stored(
    secret: str = "s1", pending: str | None = None, rotate: bool = False, uid: str = OWNER.uid, **data: str
) -> dict[str, Any]:
    """The Secret as the API server returns it (data base64, a resourceVersion)."""
    values = {"clientId": b64("kcop-operator"), "clientSecret": b64(secret)}
    if pending is not None:
        values["pendingClientSecret"] = b64(pending)
    values.update(data)
    meta: dict[str, Any] = {
        "name": "kc-operator-login",
        "namespace": "ns",
        "resourceVersion": "7",
        "ownerReferences": [{"uid": uid, "controller": True}],
    }
    if rotate:
        meta["annotations"] = {names.ANNOTATION_ROTATE_LOGIN: "now"}
    return {"metadata": meta, "data": values}


def parsed(**kw: Any) -> LoginSecret:
    found = operator_login.parse(stored(**kw), OWNER.uid)
    assert isinstance(found, LoginSecret), found
    return found


def apply_patch(secret: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """What a JSON merge patch of the shape these make does to the Secret."""
    meta = dict(secret["metadata"])
    annotations = dict(meta.get("annotations") or {})
    for k, v in (patch["metadata"].get("annotations") or {}).items():
        annotations.pop(k, None) if v is None else annotations.__setitem__(k, v)
    meta["annotations"] = annotations
    meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
    data = dict(secret["data"])
    for k, v in patch["data"].items():
        data.pop(k, None) if v is None else data.__setitem__(k, v)
    return {"metadata": meta, "data": data}


# --- the Secret -------------------------------------------------------------------------------------------


def test_the_secret_the_keycloak_owns_is_read() -> None:
    login = parsed()
    assert (login.client_id, login.secret, login.pending, login.rotate) == (
        "kcop-operator",
        "s1",
        None,
        False,
    )
    assert login.candidates() == ("s1",)
    assert parsed(pending="s2").candidates() == ("s1", "s2")
    assert parsed(pending="s1").pending is None  # a pending equal to the current one is no rotation
    assert parsed(rotate=True).rotate


def test_a_secret_someone_else_put_under_the_name_is_never_used() -> None:
    problem = operator_login.parse(stored(uid="someone-else"), OWNER.uid)
    assert problem == "it is not this Keycloak's (no controller reference to it)"
    no_controller = stored()
    no_controller["metadata"]["ownerReferences"] = [{"uid": OWNER.uid}]
    assert isinstance(operator_login.parse(no_controller, OWNER.uid), str)


def test_a_damaged_secret_is_refused_naming_the_key_never_the_value() -> None:
    assert operator_login.parse(stored(clientSecret="!!!"), OWNER.uid) == (
        "`clientSecret` is not a printable value of at most 512 characters"
    )
    missing = stored()
    del missing["data"]["clientId"]
    assert operator_login.parse(missing, OWNER.uid) == "it needs `clientId` and `clientSecret`"
    for bad in ("", " padded ", "line\nbreak", "x" * 513):
        problem = operator_login.parse(stored(secret=bad), OWNER.uid)
        assert isinstance(problem, str) and "clientSecret" in problem
        assert len(bad) < 4 or bad.strip() not in problem
    assert isinstance(operator_login.parse(stored(pendingClientSecret=b64("\x00")), OWNER.uid), str)


@given(st.dictionaries(st.text(max_size=20), st.one_of(st.text(max_size=40), st.integers(), st.none())))
def test_any_data_parses_or_is_refused_without_raising(data: dict[str, Any]) -> None:
    secret = stored()
    secret["data"] = data
    found = operator_login.parse(secret, OWNER.uid)
    assert isinstance(found, (LoginSecret, str))
    # Never quoting a value: every refusal is built from the keys' names alone. (A value may still be a
    # substring of one, as "clie" is of "clientId": that is no quote.)
    ol = operator_login
    refusals = {
        f"`{key}` is not a printable value of at most {ol.MAX_SECRET_CHARS} characters"
        for key in (ol.KEY_CLIENT_ID, ol.KEY_SECRET, ol.KEY_PENDING, ol.KEY_PREVIOUS)
    } | {f"it needs `{ol.KEY_CLIENT_ID}` and `{ol.KEY_SECRET}`"}
    assert isinstance(found, LoginSecret) or found in refusals


# --- the client -------------------------------------------------------------------------------------------


def test_the_client_is_confidential_with_a_service_account_only_and_marked() -> None:
    rep = operator_login.representation("kcop-operator", "s1")
    assert rep["publicClient"] is False and rep["serviceAccountsEnabled"] is True
    assert not (rep["standardFlowEnabled"] or rep["implicitFlowEnabled"] or rep["directAccessGrantsEnabled"])
    assert rep["secret"] == "s1" and operator_login.is_ours(rep)
    assert operator_login.drift(rep) == []


def test_drift_names_each_required_field_and_a_foreign_client() -> None:
    rep = operator_login.representation("kcop-operator", "s1")
    hand_edited = {**rep, "directAccessGrantsEnabled": True, "enabled": False}
    assert operator_login.drift(hand_edited) == ["enabled", "directAccessGrantsEnabled"]
    foreign = {**rep, "attributes": {}}
    assert not operator_login.is_ours(foreign)
    assert operator_login.drift(foreign) == [f"attributes.{operator_login.MARKER_ATTRIBUTE}"]
    assert not operator_login.is_ours({"attributes": "not a map"})


def test_only_a_wrong_or_missing_client_is_mended_with_the_bootstrap_admin() -> None:
    assert operator_login.repairable(401) and operator_login.repairable(400)
    assert not any(operator_login.repairable(s) for s in (0, 403, 404, 500, 503))


def test_the_admin_role_is_recognised_among_the_mappings() -> None:
    assert operator_login.holds_admin([{"name": "default-roles-master"}, {"name": "admin"}])
    assert not operator_login.holds_admin([{"name": "create-realm"}, "admin", None])


# --- rotation ---------------------------------------------------------------------------------------------


def test_rotation_steps() -> None:
    assert operator_login.next_step(parsed(), "s1") is Step.NONE
    assert operator_login.next_step(parsed(rotate=True), "s1") is Step.BEGIN
    assert operator_login.next_step(parsed(pending="s2"), "s1") is Step.TELL
    assert operator_login.next_step(parsed(pending="s2", rotate=True), "s1") is Step.TELL
    assert operator_login.next_step(parsed(pending="s2"), "s2") is Step.PROMOTE


def test_the_patches_are_conditional_and_keep_the_secret_keycloak_knows() -> None:
    begin = operator_login.begin_patch(parsed(rotate=True), "s2")
    assert begin["metadata"] == {"resourceVersion": "7", "annotations": {names.ANNOTATION_ROTATE_LOGIN: None}}
    assert begin["data"] == {"pendingClientSecret": b64("s2")}
    promote = operator_login.promote_patch(parsed(pending="s2"))
    assert promote == {
        "metadata": {"resourceVersion": "7"},
        "data": {"clientSecret": b64("s2"), "pendingClientSecret": None, "previousClientSecret": b64("s1")},
    }


def test_the_replaced_secret_is_tried_last_and_a_login_with_it_tells_keycloak_the_current_one() -> None:
    login = parsed(secret="s2", previousClientSecret=b64("s1"))
    assert login.candidates() == ("s2", "s1")
    assert operator_login.next_step(login, "s1") is Step.RETELL
    assert operator_login.next_step(login, "s2") is Step.NONE
    mid_rotation = parsed(secret="s2", pending="s3", previousClientSecret=b64("s1"))
    assert mid_rotation.candidates() == ("s2", "s3", "s1")
    assert operator_login.next_step(mid_rotation, "s1") is Step.RETELL
    assert parsed(secret="s2", previousClientSecret=b64("s2")).candidates() == ("s2",)


@given(st.lists(st.integers(0, 3), max_size=6))
def test_a_rotation_cut_after_any_step_finishes_with_one_secret_keycloaks(cuts: list[int]) -> None:
    """Rounds run a rotation's steps as the shell does, each round cut short after `cut` steps (an operator
    killed there): every login finds the secret Keycloak knows among the candidates, and once rounds run to
    the end the Secret holds one secret, the new one Keycloak knows, and no request."""
    secret, keycloak_knows, fresh = stored(rotate=True), "s1", iter(f"n{i}" for i in range(100))
    for cut in [*cuts, 3, 3]:
        for _ in range(cut):
            login = operator_login.parse(secret, OWNER.uid)
            assert isinstance(login, LoginSecret)
            assert keycloak_knows in login.candidates()
            step = operator_login.next_step(login, keycloak_knows)  # the candidate that logs in
            if step is Step.BEGIN:
                secret = apply_patch(secret, operator_login.begin_patch(login, next(fresh)))
            elif step is Step.TELL:
                assert login.pending is not None
                keycloak_knows = login.pending
            elif step is Step.PROMOTE:
                secret = apply_patch(secret, operator_login.promote_patch(login))
    final = operator_login.parse(secret, OWNER.uid)
    assert isinstance(final, LoginSecret)
    assert (final.secret, final.pending, final.rotate) == (keycloak_knows, None, False)
    assert keycloak_knows == "n0"


# --- the controller makes the Secret ----------------------------------------------------------------------


def test_the_keycloak_makes_its_login_secret_once_and_owns_it() -> None:
    s = spec()
    assert reconcile.decide(s, observed(s), now=NOW).create_operator_login
    made = children.operator_login_secret(OWNER, "generated")
    assert made["metadata"]["name"] == names.operator_login_secret("kc") == "kc-operator-login"
    assert OWNER.owns(made)
    assert made["stringData"] == {"clientId": "kcop-operator", "clientSecret": "generated"}
    there = reconcile.decide(s, observed(s, operator_login=made), now=NOW)
    assert not there.create_operator_login
    assert degraded_reason(there) != child_ownership.REASON


def test_a_login_secret_someone_else_made_is_reported_and_not_made_over() -> None:
    s = spec()
    theirs = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "kc-operator-login", "namespace": "ns"},
    }
    decision = reconcile.decide(s, observed(s, operator_login=theirs), now=NOW)
    assert not decision.create_operator_login
    assert degraded_reason(decision) == child_ownership.REASON


def degraded_reason(decision: reconcile.Decision) -> str | None:
    found = [c for c in (decision.status or {}).get("conditions", []) if c["type"] == "Degraded"]
    return found[0]["reason"] if found else None
