from keycloak_operator.core import names, rollout


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


def test_same_cluster_rolls() -> None:
    assert not rollout.use_recreate(dep("kc:26.0.0", "kc-v26"), "kc:26.0.1", "kc-v26")


def test_new_cluster_recreates() -> None:
    assert rollout.use_recreate(dep("kc:26.0.0", "kc-v26"), "kc:27.0.0", "kc-v27")


def test_isolation_off_and_new_image_recreates() -> None:
    assert rollout.use_recreate(dep("kc:latest", None), "kc:nightly", None)
    assert not rollout.use_recreate(dep("kc:latest", None), "kc:latest", None)


def test_isolation_off_rolls_between_patches_of_a_line_keycloak_supports_rolling_on() -> None:
    image = "quay.io/keycloak/keycloak"
    assert not rollout.use_recreate(dep(f"{image}:26.7.0", None), f"{image}:26.7.3", None)
    assert not rollout.use_recreate(dep(f"{image}:26.7.3", None), f"{image}:26.7.0", None)  # back, same line
    assert not rollout.use_recreate(dep(f"{image}:26.6.1", None), f"{image}:26.6.2", None)
    for old, new in [
        (f"{image}:26.5.6", f"{image}:26.5.7"),  # before rolling-updates:v2
        (f"{image}:26.6.1", f"{image}:26.7.0"),  # a minor upgrade migrates the schema
        (f"{image}:26.7.0", f"{image}:27.0.0"),
        (f"{image}:26.7.0", "example.com/other/keycloak:26.7.3"),
        (f"{image}:26.7.0", f"{image}:26.7.3-rc1"),
        (f"{image}:26.7", f"{image}:26.7.3"),
        (f"{image}:26.7.0", f"{image}@sha256:" + "0" * 64),
    ]:
        assert rollout.use_recreate(dep(old, None), new, None), (old, new)


def test_recreate_kept_until_rollout_completes() -> None:
    running = dep("kc:27.0.0", "kc-v27", strategy="Recreate", done=False)
    assert rollout.use_recreate(running, "kc:27.0.0", "kc-v27")
    finished = dep("kc:27.0.0", "kc-v27", strategy="Recreate", done=True)
    assert not rollout.use_recreate(finished, "kc:27.0.0", "kc-v27")


def test_first_creation_rolls() -> None:
    assert not rollout.use_recreate(None, "kc:26.0.0", "kc-v26")


def test_rollout_complete_needs_observed_generation() -> None:
    d = dep("kc:1.0.0", None)
    d["status"]["observedGeneration"] = 1
    assert not rollout.rollout_complete(d)
    assert rollout.rollout_complete(dep("kc:1.0.0", None))
