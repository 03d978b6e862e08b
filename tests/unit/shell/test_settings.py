"""Every KCOP_* variable the operator reads is read in shell/settings.py, with the defaults it had."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

from keycloak_operator.core import bounded_json
from keycloak_operator.shell import settings
from keycloak_operator.shell.settings import AdminLimits

PACKAGE = Path(__file__).resolve().parents[3] / "src" / "keycloak_operator"


def test_the_admin_limits_default_to_what_the_operator_always_used() -> None:
    limits = AdminLimits.parse({})
    assert limits == AdminLimits()
    assert limits.request_deadline_s == 20.0
    assert (limits.max_response_bytes, limits.max_own_response_bytes) == (2 * 1024 * 1024, 8 * 1024 * 1024)
    assert limits.json == bounded_json.JsonLimits(
        max_entries=bounded_json.DEFAULT_MAX_ENTRIES, max_values=bounded_json.DEFAULT_MAX_VALUES
    )


def test_each_admin_limit_comes_from_its_own_variable() -> None:
    limits = AdminLimits.parse(
        {
            "KCOP_KEYCLOAK_REQUEST_DEADLINE_SECONDS": "2.5",
            "KCOP_KEYCLOAK_MAX_RESPONSE_BYTES": "1000",
            "KCOP_OWN_KEYCLOAK_MAX_RESPONSE_BYTES": "2000",
            "KCOP_KEYCLOAK_MAX_LIST_ENTRIES": "30",
            "KCOP_KEYCLOAK_MAX_JSON_VALUES": "40",
        }
    )
    assert limits == AdminLimits(2.5, 1000, 2000, bounded_json.JsonLimits(max_entries=30, max_values=40))


@pytest.mark.parametrize(
    "name",
    [
        "KCOP_KEYCLOAK_REQUEST_DEADLINE_SECONDS",
        "KCOP_KEYCLOAK_MAX_RESPONSE_BYTES",
        "KCOP_OWN_KEYCLOAK_MAX_RESPONSE_BYTES",
        "KCOP_KEYCLOAK_MAX_LIST_ENTRIES",
        "KCOP_KEYCLOAK_MAX_JSON_VALUES",
    ],
)
def test_an_admin_limit_that_is_not_a_number_is_refused(name: str) -> None:
    with pytest.raises(ValueError):
        AdminLimits.parse({name: "lots"})


@pytest.mark.parametrize("value", ["1", "true", "TRUE", " yes ", "True"])
def test_loopback_calls_are_allowed_only_when_asked(value: str) -> None:
    assert settings.idp_loopback_http({settings.LOOPBACK_ENV: value})


@pytest.mark.parametrize("value", ["", "0", "false", "no", "on", "enabled"])
def test_anything_else_keeps_loopback_calls_refused(value: str) -> None:
    assert not settings.idp_loopback_http({settings.LOOPBACK_ENV: value})
    assert not settings.idp_loopback_http({})


def test_the_failpoint_is_empty_unless_set() -> None:
    assert settings.failpoint({}) == ""
    assert settings.failpoint({"KCOP_FAILPOINT": "after-persist:CuttingOver"}) == "after-persist:CuttingOver"


def test_the_operator_namespace_is_read_as_written_less_spaces() -> None:
    assert settings.operator_namespace({}) == ""
    assert settings.operator_namespace({"KCOP_OPERATOR_NAMESPACE": " kcop \n"}) == "kcop"


def _reads_the_environment(tree: ast.AST) -> bool:
    return any(
        (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv"))
        or (isinstance(node, ast.Name) and node.id in ("environ", "getenv"))
        for node in ast.walk(tree)
    )


def _kcop_names(tree: ast.AST) -> set[str]:
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("KCOP_")
    }


def test_no_module_but_settings_reads_a_kcop_variable() -> None:
    """A module that touches the environment names no KCOP_ variable: settings.py reads them all. (Modules
    that only name one, as a Job's script variables or a message, do not read it.)"""
    readers = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        if _reads_the_environment(tree) and _kcop_names(tree):
            readers[str(path.relative_to(PACKAGE))] = sorted(_kcop_names(tree))
    assert list(readers) == ["shell/settings.py"], readers


def test_a_test_hook_that_is_on_is_said_at_startup(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from keycloak_operator.shell import hooks_for_tests

    monkeypatch.delenv("KCOP_FAILPOINT", raising=False)
    monkeypatch.delenv(settings.LOOPBACK_ENV, raising=False)
    with caplog.at_level(logging.WARNING):
        hooks_for_tests.announce()
    assert not caplog.records
    monkeypatch.setenv("KCOP_FAILPOINT", "after-persist:CuttingOver")
    monkeypatch.setenv(settings.LOOPBACK_ENV, "true")
    with caplog.at_level(logging.WARNING):
        hooks_for_tests.announce()
    said = caplog.text
    assert "KCOP_FAILPOINT=after-persist:CuttingOver" in said and settings.LOOPBACK_ENV in said
