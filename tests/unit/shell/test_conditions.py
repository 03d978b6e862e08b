from keycloak_operator.core.common import conditions
from keycloak_operator.core.common.conditions import Wanted


def test_transition_time_kept_while_status_unchanged() -> None:
    first = conditions.merge([], [Wanted("Ready", "False", "R", "m")], now="t1", generation=1)
    second = conditions.merge(first, [Wanted("Ready", "False", "Other", "m2")], now="t2", generation=2)
    assert second[0].last_transition_time == "t1"
    assert second[0].reason == "Other" and second[0].observed_generation == 2


def test_transition_time_moves_when_status_flips() -> None:
    first = conditions.merge([], [Wanted("Ready", "False", "R")], now="t1", generation=1)
    second = conditions.merge(first, [Wanted("Ready", "True", "R")], now="t2", generation=1)
    assert second[0].last_transition_time == "t2"


def test_one_entry_per_type_and_dropped_types_go() -> None:
    first = conditions.merge([], [Wanted("A", "True", "r"), Wanted("B", "True", "r")], now="t", generation=1)
    second = conditions.merge(first, [Wanted("A", "True", "r")], now="t", generation=1)
    assert [c.type for c in second] == ["A"]
