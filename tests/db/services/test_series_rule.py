"""A series' rule read, checked and expanded (series.repeat): plain computation, no database."""

from datetime import UTC, datetime

import pytest

from capacity.placement import CapacityError
from series.repeat import MAX_OCCURRENCES, expand, parse_repeat

HOUR = 3600 * 1000
DAY = 24 * HOUR


def ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


MONDAY = ms(datetime(2027, 1, 4, 9, tzinfo=UTC))


def starts(repeat: dict, start: int = MONDAY, length: int = 3 * HOUR) -> list[datetime]:
    return [
        datetime.fromtimestamp(s / 1000, UTC) for s in expand(parse_repeat(repeat), start, start + length)
    ]


def refused(repeat: object, start: int = MONDAY, length: int = 3 * HOUR) -> str:
    with pytest.raises(CapacityError) as err:
        expand(parse_repeat(repeat), start, start + length)
    assert err.value.code == "INVALID_INPUT"
    return err.value.message


def test_weekly_on_two_days_until_a_date_includes_that_day():
    found = starts({"freq": "weekly", "byDay": ["WE", "MO"], "until": "2027-01-18"})
    assert [d.strftime("%a %d") for d in found] == ["Mon 04", "Wed 06", "Mon 11", "Wed 13", "Mon 18"]
    assert all(d.hour == 9 for d in found)


def test_every_other_week_with_a_count_and_its_rrule_text():
    rule = parse_repeat({"freq": "weekly", "byDay": ["MO"], "interval": 2, "count": 3})
    assert rule.rule_text() == "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO;COUNT=3"
    assert [d.day for d in starts({"freq": "weekly", "byDay": ["MO"], "interval": 2, "count": 3})] == [
        4,
        18,
        1,
    ]


def test_daily_on_weekdays_skips_the_weekend_and_until_reads_as_rrule():
    found = starts({"freq": "daily", "byDay": ["MO", "TU", "WE", "TH", "FR"], "count": 6})
    assert [d.strftime("%a") for d in found] == ["Mon", "Tue", "Wed", "Thu", "Fri", "Mon"]
    rule = parse_repeat({"freq": "daily", "until": "2027-01-10T09:00:00Z"})
    assert rule.rule_text() == "FREQ=DAILY;UNTIL=20270110T090000Z"
    assert len(starts({"freq": "daily", "until": "2027-01-10T09:00:00Z"})) == 7  # until is inclusive


def test_at_most_200_occurrences_and_366_days():
    assert len(starts({"freq": "daily", "count": MAX_OCCURRENCES})) == MAX_OCCURRENCES
    assert refused({"freq": "daily", "count": 201}) == "repeat.count must be from 1 to 200"
    assert refused({"freq": "daily", "until": "2027-12-31"}).startswith(
        "repeat.until: a series has at most 200"
    )
    assert refused({"freq": "weekly", "byDay": ["MO"], "count": 54}).startswith(
        "repeat.count: a series spans at most 366 days"
    )
    assert len(starts({"freq": "weekly", "byDay": ["MO"], "count": 52})) == 52


@pytest.mark.parametrize(
    ("repeat", "message"),
    [
        ({"freq": "weekly", "byDay": [], "count": 2}, "repeat.byDay must name at least one day"),
        ({"freq": "daily", "byDay": [], "count": 2}, "repeat.byDay must name at least one day"),
        ({"freq": "weekly", "count": 2}, "repeat.byDay must name at least one day"),
        ({"freq": "weekly", "byDay": ["XX"], "count": 2}, "repeat.byDay: 'XX' is not a day"),
        ({"freq": "weekly", "byDay": "MO", "count": 2}, "repeat.byDay must name at least one day"),
        ({"freq": "daily", "count": 0}, "repeat.count must be from 1 to 200"),
        ({"freq": "daily", "count": True}, "repeat.count must be from 1 to 200"),
        (
            {"freq": "daily", "interval": 0, "count": 2},
            "repeat.interval must be a whole number from 1 to 366",
        ),
        ({"freq": "daily", "until": "soon"}, "repeat.until must be a date"),
        ({"freq": "daily", "until": "2027-01-01T00:00:00"}, "repeat.until must be a date"),
        (
            {"freq": "daily", "until": "2027-01-03"},
            "repeat.until must not be before the first window's start",
        ),
        ({"freq": "hourly", "count": 2}, "repeat.freq must be daily or weekly"),
        ({"freq": "daily", "count": 2, "byMonth": [1]}, "repeat.byMonth is not a known field"),
        ({"freq": "daily"}, "repeat: give count or until (one of them)"),
        ("weekly", "repeat must be an object"),
    ],
)
def test_a_bad_rule_is_refused_naming_its_field(repeat, message):
    assert refused(repeat).startswith(message)


def test_the_first_window_must_fall_on_a_day_of_the_rule_and_windows_may_not_overlap():
    assert refused({"freq": "weekly", "byDay": ["TU", "TH"], "count": 2}) == (
        "repeat.byDay: the first window starts on a MO, not on TU, TH"
    )
    assert refused({"freq": "daily", "count": 2}, length=DAY + HOUR).startswith(
        "during: each window must end before the next occurrence starts"
    )
    assert len(starts({"freq": "daily", "count": 2}, length=DAY)) == 2  # back to back is fine


def test_a_single_occurrence_is_a_series_of_one():
    assert starts({"freq": "weekly", "byDay": ["MO"], "count": 1}) == [datetime(2027, 1, 4, 9, tzinfo=UTC)]
    assert starts({"freq": "daily", "until": MONDAY}) == [datetime(2027, 1, 4, 9, tzinfo=UTC)]


def test_a_rule_past_the_calendars_end_is_refused_not_a_fault():
    late = ms(datetime(9999, 12, 20, 9, tzinfo=UTC))
    assert (
        refused({"freq": "daily", "count": 20}, start=late)
        == "repeat.count: the series would run past 9999-12-31"
    )
    assert len(starts({"freq": "daily", "until": "9999-12-31"}, start=late)) == 12
    assert refused({"freq": "daily", "until": 10**18}).startswith("repeat.until must be a date")
