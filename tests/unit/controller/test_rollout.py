from keycloak_operator.core import rollout
from keycloak_operator.kernel import names


def dep(image: str, cluster: str | None, strategy: str = "RollingUpdate", done: bool = True) -> dict:
    labels = {names.LABEL_CACHE_CLUSTER: cluster} if cluster else {}
    n = 3 if done else 1
    return {
        "metadata": {"generation": 2, "labels": {names.LABEL_TRACK: "a"}},
        "spec": {
            "replicas": 3,
            "strategy": {"type": strategy},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"image": image}]}},
        },
        "status": {
            "observedGeneration": 2,
            "replicas": 3,
            "updatedReplicas": n,
            "availableReplicas": 3,
            "readyReplicas": 3,
        },
    }


def test_same_cluster_does_not_recreate_for_the_cluster() -> None:
    assert not rollout.use_recreate(dep("kc:26.0.0", "kc-v26"), "kc-v26")
    assert not rollout.use_recreate(dep("kc:latest", None), None)


def test_new_cluster_recreates() -> None:
    assert rollout.use_recreate(dep("kc:26.0.0", "kc-v26"), "kc-v27")
    assert rollout.use_recreate(dep("kc:26.0.0", None), "kc-v26")  # isolation turned on
    assert rollout.use_recreate(dep("kc:26.0.0", "kc-v26"), None)  # and off


def test_recreate_kept_until_rollout_completes() -> None:
    running = dep("kc:27.0.0", "kc-v27", strategy="Recreate", done=False)
    assert rollout.use_recreate(running, "kc-v27")
    finished = dep("kc:27.0.0", "kc-v27", strategy="Recreate", done=True)
    assert not rollout.use_recreate(finished, "kc-v27")


def test_first_creation_rolls() -> None:
    assert not rollout.use_recreate(None, "kc-v26")


def test_rollout_complete_needs_observed_generation() -> None:
    d = dep("kc:1.0.0", None)
    d["status"]["observedGeneration"] = 1
    assert not rollout.rollout_complete(d)
    assert rollout.rollout_complete(dep("kc:1.0.0", None))
