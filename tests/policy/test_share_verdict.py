"""The shares' verdict over a window (policy.share_verdict), with no database.

A pool of 10 GPUs; acme is guaranteed 6, globex 4 (lending at most 1 unless said otherwise):

    time   0 ........ 10 ........ 20
    acme   |=== holds ===|
    globex          |=== holds ===|
"""

from policy.share_verdict import Share, judge, within

SHARES = {"acme": Share(6), "globex": Share(4, lending_limit=1)}


def test_a_holding_within_the_guarantee_borrows_nothing():
    verdict = judge("acme", 4, (0, 10), [("acme", 0, 10, 4), ("globex", 0, 10, 4)], SHARES, 10)
    assert verdict.refused is None and verdict.borrowed == 0 and verdict.lenders == 0


def test_past_the_guarantee_it_borrows_the_difference_from_one_lender():
    verdict = judge("acme", 7, (0, 10), [("acme", 0, 10, 7)], SHARES, 10)
    assert verdict.refused is None
    assert verdict.borrowed == 1
    assert verdict.lenders == 1


def test_it_never_borrows_the_guarantee_a_lender_keeps():
    # globex lends at most 1 of its 4: 3 stay free for it, so acme may hold at most 7.
    verdict = judge("acme", 8, (0, 10), [("acme", 0, 10, 8)], SHARES, 10)
    assert verdict.refused == (
        "no GPUs to borrow: the booking would take the team 2 GPUs past its guarantee of 6,"
        " and other teams' guarantees keep 3 of the pool's 10 GPUs for themselves"
    )


def test_the_kept_guarantee_counts_only_while_unused():
    holds = [("acme", 0, 10, 7), ("globex", 0, 10, 3)]
    assert judge("acme", 1, (0, 10), holds, SHARES, 10).refused is None


def test_the_borrowing_limit_caps_what_is_held_past_the_guarantee():
    shares = {"acme": Share(6, borrowing_limit=1), "globex": Share(4)}
    verdict = judge("acme", 8, (0, 10), [("acme", 0, 10, 8)], shares, 10)
    assert verdict.refused == (
        "borrowingLimitGpus: the booking would take the team 2 GPUs past its guarantee of 6; it may borrow 1 GPU"
    )


def test_it_is_judged_at_the_instant_that_borrows_most():
    holds = [("acme", 0, 20, 4), ("acme", 10, 20, 3)]
    verdict = judge("acme", 3, (10, 20), holds, {"acme": Share(6), "globex": Share(4)}, 10)
    assert verdict.borrowed == 1 and verdict.lenders == 1


def test_unguaranteed_gpus_are_borrowed_before_any_tenant_lends():
    shares = {"acme": Share(4), "globex": Share(2)}  # 4 of 10 GPUs guaranteed to nobody
    verdict = judge("acme", 7, (0, 10), [("acme", 0, 10, 7)], shares, 10)
    assert verdict.borrowed == 3 and verdict.lenders == 0


def test_a_tenant_without_a_row_borrows_everything_it_holds():
    verdict = judge("initech", 2, (0, 10), [("initech", 0, 10, 2)], SHARES, 10)
    assert verdict.borrowed == 2 and verdict.lenders == 1


def test_within_reads_the_new_booking_on_top_of_what_the_tenant_holds():
    holds = [("acme", 0, 5, 4), ("globex", 0, 10, 4)]
    assert within("acme", 2, (0, 10), holds, SHARES)
    assert not within("acme", 3, (0, 10), holds, SHARES)
    assert within("acme", 6, (5, 10), holds, SHARES)
