from keycloak_operator.core.drift import needs_apply

SERVICE = {
    "metadata": {"name": "x", "labels": {"a": "1"}},
    "spec": {"selector": {"k": "v"}, "ports": [{"port": 1}]},
}


def test_missing_object_needs_apply() -> None:
    assert needs_apply(SERVICE, None)


def test_server_added_fields_do_not_count() -> None:
    actual = {
        "metadata": {"name": "x", "labels": {"a": "1", "extra": "y"}, "uid": "u", "resourceVersion": "9"},
        "spec": {"selector": {"k": "v"}, "ports": [{"port": 1, "protocol": "TCP"}], "clusterIP": "10.0.0.1"},
        "status": {},
    }
    assert not needs_apply(SERVICE, actual)


def test_changed_value_needs_apply() -> None:
    actual = {
        "metadata": {"name": "x", "labels": {"a": "2"}},
        "spec": {"selector": {"k": "v"}, "ports": [{"port": 1}]},
    }
    assert needs_apply(SERVICE, actual)


def test_selector_is_atomic_an_extra_key_is_drift() -> None:
    actual = {
        "metadata": {"name": "x", "labels": {"a": "1"}},
        "spec": {"selector": {"k": "v", "hand": "edit"}, "ports": [{"port": 1}]},
    }
    assert needs_apply(SERVICE, actual)


def test_list_length_change_is_drift() -> None:
    actual = {
        "metadata": {"name": "x", "labels": {"a": "1"}},
        "spec": {"selector": {"k": "v"}, "ports": [{"port": 1}, {"port": 2}]},
    }
    assert needs_apply(SERVICE, actual)


def test_pod_labels_are_exact() -> None:
    desired = {"spec": {"template": {"metadata": {"labels": {"a": "1"}}}}}
    assert needs_apply(desired, {"spec": {"template": {"metadata": {"labels": {"a": "1", "stale": "x"}}}}})
    assert not needs_apply(desired, {"spec": {"template": {"metadata": {"labels": {"a": "1"}}}}})


def test_bool_is_not_int() -> None:
    assert needs_apply({"spec": {"x": True}}, {"spec": {"x": 1}})


def test_secret_string_data_is_write_only() -> None:
    assert not needs_apply({"stringData": {"p": "s"}, "metadata": {"name": "s"}}, {"metadata": {"name": "s"}})
