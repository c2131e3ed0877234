"""Bookings as an iCalendar feed (RFC 5545, written by `icalendar`): GPU time in the calendar people use.

Each user has a secret URL, `/calendar/<token>.ics`, made on first use and rotatable; it lists
their tenants' reservations (every tenant's for operators) that end at most 30 days ago, at most
MAX_EVENTS of them, nearest first: one event per reservation, its status in the summary, its pool,
nodes and GPUs in the description. A booking that held GPUs is CONFIRMED, also once it has ended;
one released or preempted early ends at that moment (spot work given notice, at its preemptAt,
labelled preempting); one that never held GPUs and was released is CANCELLED; one waiting for GPUs is TENTATIVE.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

import icalendar
from django.db import transaction
from django.utils import timezone

from capacity.access import feed_scope
from capacity.models import Reservation
from capacity.placers.notice import preempt_at
from capacity.render import render_reservations
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


def calendar(feed: CalendarFeed, base_url: str, now: datetime | None = None) -> bytes:
    """Return the feed's iCalendar text."""
    now = now or timezone.now()
    scope = feed_scope(feed)
    found = Reservation.objects.filter(ends_at__gte=now - timedelta(days=DAYS_BACK)).select_related(
        "tenant", "pool"
    )
    if scope.tenants is not None:
        found = found.filter(tenant__slug__in=scope.tenants)
    reservations = list(found.order_by("starts_at", "pk")[:MAX_EVENTS])
    shown = render_reservations(reservations, scope)
    cal = icalendar.Calendar()
    cal.add("prodid", "-//Berth//GPU bookings//EN")
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("method", "PUBLISH")
    cal.add("x-wr-calname", "Berth: " + feed.owner.get_username())
    for reservation, data in zip(reservations, shown, strict=True):
        devices = sum(len(a.get("atoms") or []) for a in data["allocations"])
        nodes = sorted({a["nodeId"] for a in data["allocations"] if a.get("nodeId")})
        label, status, start, end = shape(reservation, held=bool(data["allocations"]))
        asked = ", ".join(
            f"{d.get('count', 1)} {d.get('class', 'gpu')}"
            for d in reservation.request.get("input", {}).get("devices", [])
        )
        link = f"{base_url}/reservations/{reservation.pk}/"
        event = icalendar.Event()
        event.add("uid", f"reservation-{reservation.pk}@berth")
        event.add("dtstamp", _second(now))
        event.add("dtstart", _second(start))
        # A booking released within its first second still lasts one: an event may not end as it starts.
        event.add("dtend", max(_second(end), _second(start) + timedelta(seconds=1)))
        event.add(
            "summary", f"[{label}] {reservation.tenant.slug}: {asked or 'booking'} on {reservation.pool.slug}"
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
        cal.add_component(event)
    return cal.to_ical()
