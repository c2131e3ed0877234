"""Bookings as an iCalendar feed (RFC 5545, written by `icalendar`): GPU time in the calendar people use.

Each user has a secret URL, `/calendar/<token>.ics`, made on first use and rotatable; it lists
their tenants' reservations (every tenant's for operators) that end at most 30 days ago, at most
MAX_EVENTS of them, nearest first: one event per reservation, its status in the summary, its pool,
nodes and GPUs in the description; a series is one recurring event (its RRULE, its cancelled
occurrences as EXDATEs, an occurrence that differs as an override). A booking that held GPUs is CONFIRMED, also once it has ended;
one released or preempted early ends at that moment (spot work given notice, at its preemptAt,
labelled preempting); one that never held GPUs and was released is CANCELLED; one waiting for GPUs is TENTATIVE,
and so is one placed but awaiting an operator's approval (labelled awaiting approval).
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

import icalendar
from django.db import transaction
from django.utils import timezone

from capacity.port import AWAITING, Reservation, Series, feed_scope, preempt_at, render_reservations, seen
from trail.record import record

from .models import CalendarFeed

DAYS_BACK = 30
MAX_EVENTS = 2000
WAITING = {"pending", "queued"}
ENDED = {"released", "preempted"}


def feed_of(user, *, rotate: bool = False) -> CalendarFeed:
    """Return the user's feed, made on first use; `rotate` gives it a new token (the old URL stops)."""
    feed = CalendarFeed.objects.filter(owner=user).first()
    if feed is None:
        with transaction.atomic():
            feed = CalendarFeed.objects.create(owner=user, token=secrets.token_urlsafe(32))
            record("calendar-token.issue", f"calendar:{user.get_username()}")  # never the token
        return feed
    if rotate:
        feed.token = secrets.token_urlsafe(32)
        with transaction.atomic():
            feed.save(update_fields=["token"])
            record("calendar-token.rotate", f"calendar:{user.get_username()}")
    return feed


def _second(at: datetime) -> datetime:
    return at.replace(microsecond=0)  # calendars show whole seconds


def shape(reservation: Reservation, held: bool) -> tuple[str, str, datetime, datetime]:
    """Return (label, STATUS, start, end) of a reservation's event; `held`: it had GPUs at some point."""
    start, end = reservation.starts_at, reservation.ends_at
    if reservation.status in WAITING:
        return reservation.status, "TENTATIVE", start, end
    if reservation.status == "placed" and reservation.condition(AWAITING) is not None:
        return "awaiting approval", "TENTATIVE", start, end  # held, but nothing starts until approved
    if reservation.status not in ENDED:
        noticed = preempt_at(reservation.conditions)  # spot work given notice: it ends then
        if noticed is not None and reservation.status == "placed":
            return "preempting", "CONFIRMED", start, min(end, datetime.fromisoformat(noticed))
        return reservation.status, "CONFIRMED", start, end
    stopped = reservation.released_at or end
    if not held or stopped <= start:
        return "cancelled", "CANCELLED", start, end  # never had its GPUs: nothing happened
    if stopped >= end:
        return "ended", "CONFIRMED", start, end
    return reservation.status, "CONFIRMED", start, stopped  # released or preempted early: ends then


def _event(reservation: Reservation, data: dict, now: datetime, base_url: str) -> icalendar.Event:
    """Return one reservation's event."""
    devices = sum(len(a.get("atoms") or []) for a in data["allocations"])
    nodes = sorted({a["nodeId"] for a in data["allocations"] if a.get("nodeId")})
    label, status, start, end = shape(reservation, held=bool(data["allocations"]))
    link = f"{base_url}/reservations/{reservation.pk}/"
    event = icalendar.Event()
    event.add("uid", f"reservation-{reservation.pk}@berth")
    event.add("dtstamp", _second(now))
    event.add("dtstart", _second(start))
    # A booking released within its first second still lasts one: an event may not end as it starts.
    event.add("dtend", max(_second(end), _second(start) + timedelta(seconds=1)))
    event.add(
        "summary",
        f"[{label}] {reservation.tenant.slug}: {_asked(reservation.request)} on {reservation.pool.slug}",
    )
    event.add(
        "description",
        "\n".join(
            [
                f"Reservation {reservation.pk} of {reservation.tenant.slug} in pool {reservation.pool.slug}",
                f"Status: {label}",
                f"Nodes: {', '.join(nodes) if nodes else 'none yet'}",
                f"GPUs and slices: {devices}",
                link,
            ]
        ),
    )
    event.add("location", reservation.pool.slug + (": " + ", ".join(nodes) if nodes else ""))
    event.add("status", status)
    event.add("url", link)
    return event


def _asked(request: dict) -> str:
    asked = ", ".join(
        f"{d.get('count', 1)} {d.get('class', 'gpu')}" for d in request.get("input", {}).get("devices", [])
    )
    return asked or "booking"


def _series_events(
    series: Series, occurrences: list[tuple[Reservation, dict]], now: datetime, base_url: str
) -> list[icalendar.Event]:
    """Return a series as one recurring event (its RRULE), with EXDATEs and the occurrences that differ.

    An occurrence that never held GPUs and ended (released before it started, or never placed) is
    an EXDATE: it does not happen. One that differs from the rule's plain booking (waiting for
    GPUs, ended early, preempting) is an override of its own (RECURRENCE-ID: its start), as
    RFC 5545 has it, so a calendar shows what each occurrence is.
    """
    uid = f"series-{series.pk}@berth"
    link = f"{base_url}/reservations/{occurrences[0][0].pk}/"
    master = icalendar.Event()
    master.add("uid", uid)
    master.add("dtstamp", _second(now))
    master.add("dtstart", _second(series.starts_at))
    master.add("dtend", _second(series.ends_at))
    master.add("rrule", icalendar.vRecur.from_ical(series.rule))
    master.add(
        "summary", f"[series] {series.tenant.slug}: {_asked({'input': series.request})} on {series.pool.slug}"
    )
    master.add(
        "description",
        f"Series {series.pk} of {series.tenant.slug} in pool {series.pool.slug}: {series.rule} (UTC)\n"
        "Each occurrence is a reservation of its own.\n" + link,
    )
    master.add("location", series.pool.slug)
    master.add("status", "CONFIRMED")
    master.add("url", link)
    events = [master]
    skipped = []
    for reservation, data in occurrences:
        label, status, _, end = shape(reservation, held=bool(data["allocations"]))
        if status == "CANCELLED":
            skipped.append(_second(reservation.starts_at))
        elif status != "CONFIRMED" or end != reservation.ends_at or label not in ("placed", "ended"):
            override = _event(reservation, data, now, base_url)
            override["uid"] = uid
            override.add("recurrence-id", _second(reservation.starts_at))
            events.append(override)
    if skipped:
        master.add("exdate", skipped)
    return events


def calendar(feed: CalendarFeed, base_url: str, now: datetime | None = None) -> bytes:
    """Return the feed's iCalendar text."""
    now = now or timezone.now()
    scope = feed_scope(feed)
    found = seen(Reservation.objects.filter(ends_at__gte=now - timedelta(days=DAYS_BACK)), scope)
    found = found.select_related("tenant", "pool")
    reservations = list(found.order_by("starts_at", "pk")[:MAX_EVENTS])
    shown = render_reservations(reservations, scope)
    cal = icalendar.Calendar()
    cal.add("prodid", "-//Berth//GPU bookings//EN")
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("method", "PUBLISH")
    cal.add("x-wr-calname", "Berth: " + feed.owner.get_username())
    members: dict[int, list[tuple[Reservation, dict]]] = {}
    for reservation, data in zip(reservations, shown, strict=True):
        if reservation.series_id is None:
            cal.add_component(_event(reservation, data, now, base_url))
        else:
            members.setdefault(reservation.series_id, []).append((reservation, data))
    found_series = Series.objects.select_related("tenant", "pool").in_bulk(list(members))
    for series_id, occurrences in members.items():
        for component in _series_events(found_series[series_id], occurrences, now, base_url):
            cal.add_component(component)
    return cal.to_ical()
