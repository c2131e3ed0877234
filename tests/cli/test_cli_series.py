"""`reserve --repeat`: a series from the command line, refused as the API refuses it (docs/series.md)."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management.base import CommandError

from capacity.models import Reservation, Series

# Reads the real clock (weekdays, next Monday): also run at fixed days by `make test-dates`.
pytestmark = pytest.mark.dates

BOOK = ("--tenant", "acme", "--pool", "lab-pool", "--gpus", "1")


def monday() -> datetime:
    today = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    return today + timedelta(days=(7 - today.weekday()) % 7 or 7)


def window() -> tuple[str, ...]:
    return ("--start", monday().isoformat(), "--for", "3h")


def test_reserve_repeat_weekly_until_books_each_occurrence_and_prints_them(run, hosts):
    until = (monday() + timedelta(days=13)).date().isoformat()
    out = run("reserve", *BOOK, *window(), "--repeat", "weekly", "--on", "mo,we", "--until", until)
    series = Series.objects.get()
    first, *rest = out.splitlines()
    assert (
        first
        == f"series {series.pk}: FREQ=WEEKLY;BYDAY=MO,WE;UNTIL={until.replace('-', '')}T235959Z, 4 occurrences"
    )
    assert len(rest) == 4 and all(line.endswith(" placed") for line in rest)
    assert Reservation.objects.filter(series=series, status="placed").count() == 4


def test_reserve_repeat_json_is_the_apis_series(run, hosts):
    data = json.loads(run("reserve", *BOOK, *window(), "--repeat", "daily", "--count", "3", "--json"))
    assert data["rule"] == "FREQ=DAILY;COUNT=3"
    assert [o["status"] for o in data["occurrences"]] == ["placed"] * 3


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--repeat", "weekly", "--count", "3"), "INVALID_INPUT: repeat.byDay must name at least one day"),
        (("--repeat", "weekly", "--on", "MO", "--count", "0"), "INVALID_INPUT: repeat.count must be from 1 to 200"),
        (("--repeat", "daily", "--count", "201"), "INVALID_INPUT: repeat.count must be from 1 to 200"),
        (("--repeat", "daily", "--until", "2020-01-01"), "INVALID_INPUT: repeat.until must not be before"),
        (("--count", "3",), "INVALID_INPUT: --on, --interval, --count, --until and --all-or-nothing need --repeat"),
    ],
)  # fmt: skip
def test_a_bad_rule_is_refused_with_exit_code_2_and_books_nothing(run, hosts, argv, message):
    with pytest.raises(CommandError) as failed:
        run("reserve", *BOOK, *window(), *argv)
    assert failed.value.returncode == 2
    assert str(failed.value).startswith(message)
    assert not Reservation.objects.exists() and not Series.objects.exists()


def test_all_or_nothing_refuses_with_exit_code_2_when_an_occurrence_would_not_place(run, hosts):
    for _ in range(2):
        run("reserve", "--tenant", "acme", "--pool", "lab-pool", "--gpus", "4", *window())
    with pytest.raises(CommandError) as failed:
        run("reserve", *BOOK, *window(), "--repeat", "daily", "--count", "2", "--all-or-nothing")
    assert (failed.value.returncode, str(failed.value)) == (
        2,
        "SERIES_NOT_PLACED: allOrNothing: 1 of 2 occurrences would not place; nothing was booked",
    )
    assert Reservation.objects.count() == 2 and not Series.objects.exists()
