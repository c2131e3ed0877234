"""The pending reason summary."""

from __future__ import annotations

from capacity.placement import Rejection, summarize

TIMES = "\u00d7"


def rejected(*pairs: tuple[str, str]) -> list[Rejection]:
    return [Rejection(f"n{i}", f, r) for i, (f, r) in enumerate(pairs)]


def test_the_spec_example() -> None:
    found = summarize(
        rejected(("eligible", "cordoned"), ("fits", "1 of 4 gpu free"), ("fits", "1 of 4 gpu free")), 3
    )
    assert found == "no node fits (3 nodes): 2 \u00d7 fits: 1 of 4 gpu free; 1 \u00d7 cordoned"


def test_an_empty_pool() -> None:
    assert summarize([], 0) == "the pool has no nodes"


def test_one_node_is_singular() -> None:
    assert summarize(rejected(("eligible", "cordoned")), 1) == f"no node fits (1 node): 1 {TIMES} cordoned"


def test_eligibility_reasons_stand_alone_and_other_filters_are_named() -> None:
    found = summarize(
        rejected(
            ("excluded", "excluded by the request"), ("rack-a", "too hot"), ("eligible", "in maintenance")
        ),
        3,
    )
    assert found == (
        f"no node fits (3 nodes): 1 {TIMES} excluded: excluded by the request; 1 {TIMES} rack-a: too hot; "
        f"1 {TIMES} in maintenance"
    )


def test_groups_are_most_common_first_ties_in_first_seen_order_at_most_five() -> None:
    pairs = [("eligible", r) for r in ["a", "b", "c", "c", "d", "e", "f", "g", "g", "g"]]
    assert summarize(rejected(*pairs), 12) == (
        f"no node fits (12 nodes): 3 {TIMES} g; 2 {TIMES} c; 1 {TIMES} a; 1 {TIMES} b; 1 {TIMES} d"
    )


def test_the_groups_past_the_fifth_are_kept_apart_in_order() -> None:
    from capacity.placement.reasons import rest_groups

    rows = rejected(
        ("fits", "0 of 4 gpu free"),
        ("fits", "0 of 4 gpu free"),
        ("eligible", "cordoned"),
        ("eligible", "in maintenance"),
        ("eligible", "unreachable"),
        ("eligible", "provisioning"),
        ("eligible", "NotReady"),
        ("eligible", "not converged"),
    )
    shown = summarize(rows, 8)
    assert shown.count(TIMES) == 5
    assert rest_groups(rows) == [(1, "NotReady"), (1, "not converged")]
    assert rest_groups(rows[:6]) == []
