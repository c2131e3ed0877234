"""Fair share's pure math: GPU-hours booked, decayed by a half-life, over the guarantee."""

import math

import pytest

from policy.fairshare import HOUR, decayed_gpu_hours, fair_share

DAY = 24 * HOUR
WEEK = 7 * DAY
NOW = 1_000 * DAY


def test_an_hour_booked_just_now_counts_about_whole():
    assert decayed_gpu_hours([(NOW - HOUR, NOW, 1)], NOW, WEEK) == pytest.approx(1, rel=5e-3)


def test_an_hour_booked_a_half_life_ago_counts_half():
    hours = decayed_gpu_hours([(NOW - WEEK - HOUR, NOW - WEEK, 2)], NOW, WEEK)
    assert hours == pytest.approx(1, rel=5e-3)


def test_the_part_after_now_is_not_booked_yet_and_counts_nothing():
    assert decayed_gpu_hours([(NOW, NOW + DAY, 8)], NOW, WEEK) == 0
    assert decayed_gpu_hours([(NOW - HOUR, NOW + DAY, 1)], NOW, WEEK) == pytest.approx(1, rel=5e-3)


def test_a_mig_slice_counts_its_share_of_a_gpu():
    whole = decayed_gpu_hours([(NOW - DAY, NOW, 1)], NOW, WEEK)
    assert decayed_gpu_hours([(NOW - DAY, NOW, 3 / 7)], NOW, WEEK) == pytest.approx(whole * 3 / 7)


def test_holding_exactly_the_guarantee_for_ever_is_a_fair_share_of_one():
    forever = decayed_gpu_hours([(NOW - 100 * WEEK, NOW, 4)], NOW, WEEK)
    assert fair_share(forever, 4, WEEK) == pytest.approx(1, rel=1e-6)
    assert fair_share(forever, 2, WEEK) == pytest.approx(2, rel=1e-6)


def test_a_week_at_the_guarantee_reads_as_half_its_share():
    # ∫ over the last half-life of 2^(-age/h) is half of the integral for ever.
    week = decayed_gpu_hours([(NOW - WEEK, NOW, 4)], NOW, WEEK)
    assert fair_share(week, 4, WEEK) == pytest.approx(0.5, rel=1e-6)
    assert week == pytest.approx(4 * WEEK / math.log(2) / 2 / HOUR, rel=1e-6)


def test_no_guarantee_has_no_fair_share():
    assert fair_share(12.0, 0, WEEK) is None


def test_a_half_life_must_be_positive():
    with pytest.raises(ValueError):
        decayed_gpu_hours([], NOW, 0)
