"""A previous version of this operator, from this repository's own history, to run beside the current one.

The test runs REAL old code, not a flag that pretends to be old: the `src/` of the commit just before
KeycloakGroup landed, extracted with `git archive` into a temporary directory and put first on PYTHONPATH
(the dependencies of that commit are the venv's: the lock file did not change in a way its code notices;
`check` proves the process imports the old package). A clone without that history fails here, loudly: a
shallow clone would otherwise make the test prove nothing.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
FIRST_UNKNOWN_KIND_MODEL = "src/keycloak_operator/models/group.py"


def _git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True).stdout


def commit_before_groups() -> str:
    added = _git("log", "--diff-filter=A", "--format=%H", "--", FIRST_UNKNOWN_KIND_MODEL).decode().split()
    if not added:
        raise AssertionError(
            f"no commit adding {FIRST_UNKNOWN_KIND_MODEL} in {REPO}'s history: the two-version test "
            "needs the full history (git fetch --unshallow)"
        )
    return _git("rev-parse", f"{added[-1]}^").decode().strip()


def extract(commit: str, into: Path) -> Path:
    """The commit's src/, for PYTHONPATH."""
    archive = _git("archive", "--format=tar", commit, "src")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def check(src: Path) -> None:
    """The interpreter the operator runs with imports the old package from `src`, which has no groups."""
    probe = (
        "import importlib.util, keycloak_operator; "
        "print(keycloak_operator.__file__); "
        "print(importlib.util.find_spec('keycloak_operator.models.group') is None)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={**os.environ, "PYTHONPATH": str(src)},
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert out == [str(src / "keycloak_operator" / "__init__.py"), "True"], out
