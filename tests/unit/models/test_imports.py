"""Every pure module (core, models) imports on its own, first: an import cycle that only bites in one order
(a command that imports the planner before the blue-green machine) fails here, not in a user's shell. The
shell is left out: its metrics register with one process-wide registry, once."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

from keycloak_operator import core, models

SCRIPT = """
import importlib, sys
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m.startswith("keycloak_operator")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as e:
        failed.append(f"{name}: {type(e).__name__}: {e}")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    modules = [
        m.name
        for package in (core, models)
        for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
    ]
    assert len(modules) > 50
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *modules], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
