"""Stored formats advertised in the peering identity, and the format in effect (core/common/formats.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core.common import formats
from keycloak_operator.core.common.formats import FORMAT_VERSION, OLDEST_FORMAT, Supported

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def entry(seconds_ago: float, lifetime: int = 60) -> dict[str, object]:
    seen = NOW - timedelta(seconds=seconds_ago)
    return {"priority": 100, "lifetime": lifetime, "lastseen": seen.isoformat()}


def test_this_replica_advertises_its_range_and_reads_it_back() -> None:
    identity = formats.advertise("kcop-7d9f-abcde")
    assert identity == f"kcop-7d9f-abcde@kcop-formats-{OLDEST_FORMAT}-{FORMAT_VERSION}"
    assert formats.advertised(identity) == formats.THIS_REPLICA


def test_an_identity_without_advertisement_is_a_replica_from_before_formats() -> None:
    # cli.py before formats: `<host>-<pid>-<hex>` or the pod's name; kopf's own default holds '@' and '/'.
    for old in ("host-123-abcdef", "kcop-5d8c9-x2x", "root@host/20261124/abc", "x@kcop-formats-a-b"):
        assert formats.advertised(old) == Supported(1, 1)


def test_a_reversed_range_claims_nothing_beyond_format_1() -> None:
    assert formats.advertised("p@kcop-formats-3-2") == Supported(1, 1)


def test_only_live_peers_count() -> None:
    status = {
        formats.advertise("new"): entry(1),
        "old-replica": entry(120),  # its lastseen + lifetime passed: dead
        "not-a-peer": "garbage",
    }
    assert formats.live_support([status], NOW) == [formats.THIS_REPLICA]
    assert formats.in_effect(formats.live_support([status], NOW)) == FORMAT_VERSION


def test_one_live_old_replica_holds_everyone_on_the_old_format() -> None:
    status = {formats.advertise("new"): entry(1), "old-replica": entry(5)}
    assert formats.in_effect(formats.live_support([status], NOW)) == 1


def test_a_peer_in_any_watched_namespaces_peering_counts() -> None:
    one = {formats.advertise("new"): entry(1)}
    other = {formats.advertise("new"): entry(1), "old-replica": entry(1)}
    assert formats.in_effect(formats.live_support([one, other], NOW)) == 1


def test_nothing_seen_yet_means_the_oldest_format() -> None:
    assert formats.in_effect([]) == OLDEST_FORMAT


def test_a_peer_sharing_no_format_means_no_agreement_and_no_format_to_write() -> None:
    # The ADR: a format a live replica cannot read is never written; with nothing in common, nothing is.
    assert formats.in_effect([Supported(7, 9)], Supported(1, 2)) is None
    assert formats.in_effect([Supported(1, 1), Supported(7, 9)], Supported(1, 2)) is None
    assert formats.in_effect([Supported(1, 3)], Supported(2, 3)) == 3


@given(
    mine=st.tuples(st.integers(1, 6), st.integers(0, 3)).map(lambda t: Supported(t[0], t[0] + t[1])),
    peers=st.lists(
        st.tuples(st.integers(1, 6), st.integers(0, 3)).map(lambda t: Supported(t[0], t[0] + t[1]))
    ),
)
def test_the_format_in_effect_is_the_newest_every_replica_supports(
    mine: Supported, peers: list[Supported]
) -> None:
    fmt = formats.in_effect([mine, *peers], mine)
    assert fmt is None or fmt in mine
    common = [f for f in range(mine.oldest, mine.newest + 1) if all(f in p for p in peers)]
    assert fmt == (max(common) if common else None)
