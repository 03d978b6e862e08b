import pytest

from keycloak_operator.core import rollback


def keycloak(**versions: str) -> dict:
    return {"metadata": {"name": "kc"}, "spec": {"replicas": 5}, "status": {"versions": versions}}


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
    spec = rollback.restored_spec({"metadata": {"name": "kc"}, "spec": today}, {"data": {"spec": stored}})
    assert spec["image"] == "kc:26.0.0"
    assert spec["replicas"] == 5
    assert spec["upgradePolicy"]["strategy"] == "BlueGreen" and spec["upgradePolicy"]["drainDelay"] == "9s"


@pytest.mark.parametrize("revision", [{}, {"data": {}}, {"data": {"spec": {"image": "kc:26.0.0"}}}])
def test_a_stored_spec_that_cannot_be_restored_is_refused(revision: dict) -> None:
    with pytest.raises(rollback.RollbackRefused, match="cannot be restored"):
        rollback.restored_spec(keycloak(), revision)
