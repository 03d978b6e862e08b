"""The user guide against the code it describes: the upgrade diagram names every state of the machine."""

from __future__ import annotations

import re
from pathlib import Path

from keycloak_operator.core import bluegreen as bg

ROOT = Path(__file__).resolve().parents[3]


def diagram() -> str:
    text = (ROOT / "docs" / "guide" / "upgrades.md").read_text()
    found = re.search(r"```mermaid\n(.*?)```", text, re.DOTALL)
    assert found, "upgrades.md has no state diagram"
    return found.group(1)


def test_the_state_diagram_shows_every_state_of_the_machine() -> None:
    states = set(re.findall(r"\b([A-Z][A-Za-z]+)\s+-->", diagram())) | set(
        re.findall(r"-->\s+([A-Z][A-Za-z]+)", diagram())
    )
    assert states == set(bg.STATES)
