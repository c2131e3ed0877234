"""The pure peak-over-a-window computation that quota, scalar room and capacity share."""

import random

from capacity.placement.timeline import at, peak


def test_no_interval_holds_nothing():
    assert peak([], 0, 10) == 0


def test_back_to_back_intervals_never_add_up():
    assert peak([(0, 5, 8), (5, 10, 8)], 0, 10) == 8


def test_overlapping_intervals_add_up_only_where_they_overlap():
    assert peak([(0, 6, 3), (4, 10, 4), (8, 12, 5)], 0, 12) == 9


def test_intervals_outside_the_window_do_not_count():
    held = [(0, 5, 100), (20, 30, 100), (5, 20, 7)]
    assert peak(held, 5, 20) == 7


def test_window_clips_an_interval_that_started_before_it():
    assert peak([(0, 100, 4), (50, 60, 2)], 10, 40) == 4


def test_peak_matches_a_brute_force_scan_of_every_instant():
    rng = random.Random(7)
    for _ in range(200):
        held = []
        for _ in range(rng.randint(0, 8)):
            s = rng.randint(0, 40)
            held.append((s, s + rng.randint(1, 15), rng.randint(1, 5)))
        start = rng.randint(0, 40)
        end = start + rng.randint(1, 20)
        expected = max(at(held, t) for t in range(start, end))
        assert peak(held, start, end) == expected
