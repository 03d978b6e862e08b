"""The integration suite's session operator is stopped by whoever asks, whatever name they import it under.

pytest imports tests/integration/conftest.py as `integration.conftest` (tests/ has no __init__.py, so the
package name starts below it), while a test module that imports from it by path gets a second copy,
`tests.integration.conftest`, with its own module state. The two-version test stopped the session operator
through that second copy: its list of running session operators was empty, so the standalone session
operator (this code, which alone writes the newest stored format) went on beside the two replicas and stamped
the realm `kcop.dev.format=2` while the old replica lived. The list now lives in a support module
(tests/integration/support/session_operators.py), which has one name.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

CONFTEST = Path(__file__).resolve().parents[2] / "integration" / "conftest.py"


class _Process:
    """What the context manager uses of an OperatorProcess."""

    def __init__(self) -> None:
        self.running = True
        self.args: list[tuple[str, ...]] = []

    def alive(self) -> bool:
        return self.running

    def stop(self) -> None:
        self.running = False

    def start(self, *args: str) -> None:
        self.args.append(args)
        self.running = True


@pytest.fixture
def as_pytest_imports_it() -> Iterator[ModuleType]:
    """tests/integration/conftest.py under the name pytest gives it, a module apart from
    `tests.integration.conftest`."""
    name = "integration.conftest"
    spec = importlib.util.spec_from_file_location(name, CONFTEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get(name)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        if saved is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = saved


@pytest.mark.parametrize(
    "imported_from",
    # what the two-version test imports; and conftest by path, as it did before (a second copy of conftest)
    ["tests.integration.support.session_operators", "tests.integration.conftest"],
)
def test_a_test_module_stops_the_session_operator_the_fixture_started(
    as_pytest_imports_it: ModuleType, imported_from: str
) -> None:
    by_fixture = _Process()
    as_pytest_imports_it.SESSION_OPERATORS.append(by_fixture)  # what the `operator` fixture does
    as_tests_import_it = importlib.import_module(imported_from)
    try:
        with as_tests_import_it.session_operators_stopped():  # what the two-version test does
            assert not by_fixture.alive()
        assert by_fixture.alive()
        assert by_fixture.args == [("--all-namespaces",)]
    finally:
        as_pytest_imports_it.SESSION_OPERATORS.remove(by_fixture)


def test_the_session_operator_is_started_again_when_the_test_fails(as_pytest_imports_it: ModuleType) -> None:
    by_fixture = _Process()
    as_pytest_imports_it.SESSION_OPERATORS.append(by_fixture)
    try:
        with pytest.raises(RuntimeError), as_pytest_imports_it.session_operators_stopped():
            raise RuntimeError("the test failed")
        assert by_fixture.alive()
    finally:
        as_pytest_imports_it.SESSION_OPERATORS.remove(by_fixture)
