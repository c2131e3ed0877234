"""A series from the booking form ("repeat weekly on … until …"), its occurrences on a reservation's page,
and its refusals next to their fields (docs/series.md)."""

from datetime import UTC, datetime, timedelta

import pytest

from capacity.models import Reservation, Series

from web_helpers import HX, error_next_to

# Reads the real clock (weekdays, next Monday): also run at fixed days by `make test-dates`.
pytestmark = pytest.mark.dates


def monday() -> datetime:
    today = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    return today + timedelta(days=(7 - today.weekday()) % 7 or 7)


def form(**extra) -> dict:
    start = monday()
    return {
        "tenant": "acme",
        "pool": "lab-pool",
        "count": "1",
        "device_class": "gpu",
        "start": start.strftime("%Y-%m-%d %H:%M"),
        "end": (start + timedelta(hours=3)).strftime("%Y-%m-%d %H:%M"),
        "repeat": "weekly",
        "repeat_on": ["MO", "WE"],
        "repeat_until": (start + timedelta(days=9)).date().isoformat(),
        **extra,
    }


@pytest.fixture
def lab(make_node, tenant):
    for name in ("node-a", "node-b"):
        make_node(name, gpus=4)


def test_the_form_books_a_weekly_series_and_the_occurrence_page_lists_it(op, lab):
    response = op.post("/book/", form())
    series = Series.objects.get()
    first = Reservation.objects.filter(series=series).order_by("starts_at").first()
    assert response.status_code == 302 and response.url == f"/reservations/{first.pk}/"
    assert series.rule.startswith("FREQ=WEEKLY;BYDAY=MO,WE;UNTIL=")
    assert Reservation.objects.filter(series=series, status="placed").count() == 4
    page = op.get(response.url).text
    assert f"Series #{series.pk}" in page and "occurrence 1 of 4" in page
    assert page.count('href="/reservations/') >= 4
    assert "Release the series" in page


def test_an_htmx_booking_answers_with_the_first_occurrence_and_the_series(op, lab):
    html = op.post("/book/", form(), **HX).text
    assert 'id="series"' in html and "occurrence 1 of 4" in html


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"repeat_on": []}, "repeat_on", "the days must name at least one day"),
        ({"repeat_until": "", "repeat_count": "0"}, "repeat_count", "the count must be from 1 to 200"),
        ({"repeat_until": "", "repeat_count": "201"}, "repeat_count", "the count must be from 1 to 200"),
        (
            {"repeat_until": "2020-01-01"},
            "repeat_until",
            "until must not be before the first window&#x27;s start",
        ),
        ({"repeat_until": "someday"}, "repeat_until", "until must be a date"),
        ({"repeat": "", "repeat_on": ["MO"]}, "repeat", "choose daily or weekly to book a series"),
    ],
)
def test_a_bad_rule_is_shown_next_to_its_field_and_books_nothing(op, lab, change, field, message):
    for headers in ({}, HX):
        html = op.post("/book/", form(**change), **headers).text
        assert message in error_next_to(html, field), error_next_to(html, field)
    assert not Reservation.objects.exists() and not Series.objects.exists()


def test_all_or_nothing_lists_the_occurrences_that_would_not_place_next_to_the_box(op, lab):
    start = monday() + timedelta(days=2)
    for _ in range(2):
        op.post(
            "/book/",
            {**form(repeat="", repeat_on=[], repeat_until=""), "count": "4", "start": start.strftime("%Y-%m-%d %H:%M"),
             "end": (start + timedelta(hours=3)).strftime("%Y-%m-%d %H:%M")},
        )  # fmt: skip
    assert Reservation.objects.filter(status="placed").count() == 2
    html = op.post("/book/", form(all_or_nothing="on"), **HX).text
    said = error_next_to(html, "all_or_nothing")
    assert "allOrNothing: 1 of 4 occurrences would not place; nothing was booked" in said
    assert f"{start:%a %Y-%m-%d} 09:00 UTC: no node fits" in said
    assert Reservation.objects.count() == 2 and not Series.objects.exists()


def test_releasing_the_series_from_an_occurrence_page_releases_the_rest(op, lab):
    op.post("/book/", form())
    first = Reservation.objects.order_by("starts_at").first()
    op.post(f"/reservations/{first.pk}/release/")
    response = op.post(f"/series/{first.series_id}/release/", {"next": f"/reservations/{first.pk}/"})
    assert response.status_code == 302 and response.url == f"/reservations/{first.pk}/"
    assert set(Reservation.objects.values_list("status", flat=True)) == {"released"}
