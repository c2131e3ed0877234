"""The calendar feed: a secret iCalendar URL per user with their tenants' bookings, valid RFC 5545."""

from datetime import timedelta

import icalendar
import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from capacity import services
from capacity.models import Reservation
from series.book import reserve_series
from webhooks.calendar import calendar, feed_of

# Reads the real clock (weekdays, next Monday): also run at fixed days by `make test-dates`.
pytestmark = pytest.mark.dates


def read(client, url):
    answer = client.get(url)
    assert answer.status_code == 200 and answer["Content-Type"] == "text/calendar; charset=utf-8"
    return icalendar.Calendar.from_ical(answer.content)


def test_a_tenants_calendar_lists_its_bookings_one_event_each_with_status_pool_nodes_and_gpus(
    lab, people, book
):
    alice, _bob, _ops = people
    mine = book(gpus=2)
    later = int((timezone.now() + timedelta(days=2)).timestamp() * 1000)
    gone = book(gpus=1, during={"start": later, "end": later + 3_600_000})
    services.release(gone.pk)  # before its start: it never held its GPUs
    book("globex", gpus=1)
    api = APIClient()
    api.force_authenticate(alice)
    url = api.get("/api/v1/calendar").json()["url"]
    assert url.startswith("http://testserver/calendar/") and url.endswith(".ics")
    cal = read(Client(), url)  # no sign-in: the URL is the key
    events = {str(e["UID"]): e for e in cal.walk("VEVENT")}
    assert set(events) == {f"reservation-{mine.pk}@berth", f"reservation-{gone.pk}@berth"}
    placed = events[f"reservation-{mine.pk}@berth"]
    assert str(placed["SUMMARY"]) == "[placed] acme: 2 gpu on lab-pool"
    assert str(placed["STATUS"]) == "CONFIRMED"
    cancelled = events[f"reservation-{gone.pk}@berth"]
    assert str(cancelled["STATUS"]) == "CANCELLED" and str(cancelled["SUMMARY"]).startswith("[cancelled] ")
    assert "Nodes: node-" in str(placed["DESCRIPTION"]) and "GPUs and slices: 2" in str(placed["DESCRIPTION"])
    assert placed.decoded("DTSTART") == mine.starts_at.replace(microsecond=0)
    assert placed.decoded("DTEND") - placed.decoded("DTSTART") == timedelta(days=1)


def test_a_booking_that_ended_with_its_window_is_confirmed_and_keeps_its_whole_window(lab, people, book):
    alice, _bob, _ops = people
    held = book(gpus=1)
    after = held.ends_at + timedelta(minutes=5)
    assert services.expire_ended(now=after) == 1  # the worker releases it once its window is over
    (event,) = icalendar.Calendar.from_ical(calendar(feed_of(alice), "http://x", now=after)).walk("VEVENT")
    assert str(event["STATUS"]) == "CONFIRMED" and str(event["SUMMARY"]).startswith("[ended] ")
    assert event.decoded("DTEND") == held.ends_at.replace(microsecond=0)


def test_a_booking_released_early_ends_its_event_at_the_release(lab, people, book):
    alice, _bob, _ops = people
    held = book(gpus=1)  # a day from now
    at = held.starts_at + timedelta(hours=3, seconds=20)
    services.release(held.pk, now=at)
    (event,) = icalendar.Calendar.from_ical(calendar(feed_of(alice), "http://x", now=at)).walk("VEVENT")
    assert str(event["STATUS"]) == "CONFIRMED" and str(event["SUMMARY"]).startswith("[released] ")
    assert event.decoded("DTSTART") == held.starts_at.replace(microsecond=0)
    assert event.decoded("DTEND") == at.replace(microsecond=0)


def test_rotating_the_address_ends_the_old_one_and_an_unknown_one_is_404(lab, people, book):
    alice, _bob, _ops = people
    old = feed_of(alice).token
    client = Client()
    assert client.get(f"/calendar/{old}.ics").status_code == 200
    new = feed_of(alice, rotate=True).token
    assert new != old
    assert client.get(f"/calendar/{old}.ics").status_code == 404
    assert client.get(f"/calendar/{new}.ics").status_code == 200


def test_long_lines_are_folded_at_75_octets_and_text_is_escaped(lab, people, book):
    alice, _bob, _ops = people
    book(gpus=1)
    text = Client().get(f"/calendar/{feed_of(alice).token}.ics").content.decode()
    assert text.endswith("\r\n") and "\n" not in text.replace("\r\n", "")
    assert all(len(line.encode()) <= 75 for line in text.split("\r\n"))
    assert "\\n" in text and "Reservation " in text


def test_bookings_that_ended_over_30_days_ago_are_left_out(lab, people, book):
    alice, _bob, _ops = people
    held = book(gpus=1)  # ends in a day
    feed = feed_of(alice)
    in_29 = icalendar.Calendar.from_ical(calendar(feed, "http://x", now=held.ends_at + timedelta(days=29)))
    in_31 = icalendar.Calendar.from_ical(calendar(feed, "http://x", now=held.ends_at + timedelta(days=31)))
    assert len(in_29.walk("VEVENT")) == 1 and in_31.walk("VEVENT") == []


def test_spot_work_given_notice_ends_its_event_at_preempt_at(lab, people, book):
    alice, _bob, _ops = people
    held = book(gpus=1)
    at = held.starts_at + timedelta(hours=2)
    notice = {
        "type": "PreemptAt",
        "status": "True",
        "reason": "PreemptedByRegular",
        "message": "m",
        "at": at.isoformat(),
    }
    Reservation.objects.filter(pk=held.pk).update(conditions=[notice])
    (event,) = icalendar.Calendar.from_ical(calendar(feed_of(alice), "http://x")).walk("VEVENT")
    assert str(event["STATUS"]) == "CONFIRMED" and str(event["SUMMARY"]).startswith("[preempting] ")
    assert event.decoded("DTEND") == at.replace(microsecond=0)


def test_a_series_is_one_recurring_event_with_its_rrule_exdates_and_overrides(lab, people):
    from datetime import UTC, datetime

    from capacity.models import Series

    alice, _bob, _ops = people
    today = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    monday = today + timedelta(days=(7 - today.weekday()) % 7 or 7)
    window = {"start": monday.isoformat(), "end": (monday + timedelta(hours=3)).isoformat()}
    # Three occurrences: the second released before it starts, the third pending (4 GPUs taken).
    third = monday + timedelta(days=14)
    taken = {"start": third.isoformat(), "end": (third + timedelta(hours=3)).isoformat()}
    for _ in range(2):
        services.reserve(
            {"tenantId": "globex", "poolId": "lab-pool", "devices": [{"count": 4}], "during": taken}
        )
    done = reserve_series(
        {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "devices": [{"class": "gpu", "count": 1}],
            "during": window,
            "repeat": {"freq": "weekly", "byDay": ["MO"], "count": 3},
        }
    )
    first, second, pending = (o.reservation_id for o in done.occurrences)
    services.release(second)
    cal = icalendar.Calendar.from_ical(calendar(feed_of(alice), "http://x"))
    events = cal.walk("VEVENT")
    series = Series.objects.get()
    assert {str(e["UID"]) for e in events} == {f"series-{series.pk}@berth"}
    (master,) = [e for e in events if "RECURRENCE-ID" not in e]
    assert master["RRULE"].to_ical() == b"FREQ=WEEKLY;COUNT=3;BYDAY=MO"
    assert master.decoded("DTSTART") == monday and master.decoded("DTEND") == monday + timedelta(hours=3)
    assert [d.dt for d in master["EXDATE"].dts] == [monday + timedelta(days=7)]
    (override,) = [e for e in events if "RECURRENCE-ID" in e]
    assert override.decoded("RECURRENCE-ID") == third
    assert str(override["STATUS"]) == "TENTATIVE" and str(override["SUMMARY"]).startswith("[pending] ")
    assert f"/reservations/{pending}/" in str(override["URL"])
    assert f"/reservations/{first}/" in str(master["URL"])
