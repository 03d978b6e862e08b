import pytest

from keycloak_operator.core import rollback


def keycloak(**versions: str) -> dict:
    meta = {"name": "kc", "namespace": "ns", "uid": "u1"}
    return {"metadata": meta, "spec": {"replicas": 5}, "status": {"versions": versions}}


OURS = {"name": "kc-aaaaaaaaaa", "ownerReferences": [{"uid": "u1", "controller": True}]}


def test_stuck_change_rolls_back_to_what_runs() -> None:
    plan = rollback.plan(keycloak(currentVersion="26.0.0#" + "a" * 40, nextVersion="26.0.2#" + "b" * 40))
    assert plan.target.startswith("26.0.0#") and plan.revision_name == "kc-" + "a" * 10


def test_completed_change_rolls_back_to_last_good() -> None:
    plan = rollback.plan(keycloak(currentVersion="27.0.0#" + "c" * 40, lastVersion="26.0.0#" + "a" * 40))
    assert plan.target.startswith("26.0.0#")


def test_nothing_recorded_is_refused() -> None:
    with pytest.raises(rollback.RollbackRefused):
        rollback.plan(keycloak(currentVersion="26.0.0#" + "a" * 40))


DB = {"external": {"host": "db", "credentialsSecret": {"name": "db"}}}


def test_restored_spec_brings_back_the_image_and_keeps_todays_unversioned_fields() -> None:
    today = {
        "image": "kc:27.0.0",
        "replicas": 5,
        "database": DB,
        "upgradePolicy": {"strategy": "BlueGreen", "drainDelay": "9s"},
    }
    stored = {"image": "kc:26.0.0", "replicas": 2, "database": DB, "upgradePolicy": {"strategy": "Recreate"}}
    spec = rollback.restored_spec({**keycloak(), "spec": today}, {"metadata": OURS, "data": {"spec": stored}})
    assert spec["image"] == "kc:26.0.0"
    assert spec["replicas"] == 5
    assert spec["upgradePolicy"]["strategy"] == "BlueGreen" and spec["upgradePolicy"]["drainDelay"] == "9s"


@pytest.mark.parametrize("data", [{}, {"data": {}}, {"data": {"spec": {"image": "kc:26.0.0"}}}])
def test_a_stored_spec_that_cannot_be_restored_is_refused(data: dict) -> None:
    with pytest.raises(rollback.RollbackRefused, match="cannot be restored"):
        rollback.restored_spec(keycloak(), {"metadata": OURS, **data})


@pytest.mark.parametrize(
    "refs",
    [[], [{"uid": "someone-else", "controller": True}], [{"uid": "u1"}]],
)
def test_a_revision_this_keycloak_did_not_make_is_never_restored(refs: list) -> None:
    """Its name is predictable: anyone who may create ControllerRevisions there could plant a spec."""
    planted = {
        "metadata": {**OURS, "ownerReferences": refs},
        "data": {"spec": {"image": "evil:1", "database": DB}},
    }
    with pytest.raises(rollback.RollbackRefused, match="is not this Keycloak's"):
        rollback.restored_spec(keycloak(), planted)
