"""kcop_replicated_resources' counts: bounded by the fixed kinds and phases."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.replication import standing
from keycloak_operator.kernel import names


def test_counts_by_kind_and_phase_with_zeros() -> None:
    counts = standing.tally(
        [(names.REALM_KIND, "Error"), (names.REALM_KIND, "Error"), (names.CLIENT_KIND, "Ready")]
    )
    assert counts[(names.REALM_KIND, "Error")] == 2 and counts[(names.CLIENT_KIND, "Ready")] == 1
    assert counts[(names.GROUP_KIND, "Pending")] == 0
    assert len(counts) == len(standing.KINDS) * len(standing.PHASES)
    assert standing.FAILING in standing.PHASES


@given(st.lists(st.tuples(st.one_of(st.sampled_from(standing.KINDS), st.text()), st.text()), max_size=20))
def test_an_unknown_kind_or_phase_adds_no_series(pairs: list[tuple[str, str]]) -> None:
    counts = standing.tally(pairs)
    assert set(counts) == {(k, p) for k in standing.KINDS for p in standing.PHASES}
    assert sum(counts.values()) == sum(1 for p in pairs if p in counts)
