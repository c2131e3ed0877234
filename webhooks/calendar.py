"""Bookings as an iCalendar feed (RFC 5545): people see their GPU time in the calendar they use.

Each user has a secret URL, `/calendar/<token>.ics`, made on first use and rotatable; it lists
their tenants' reservations (every tenant's for operators) that end at most 30 days ago, at most
MAX_EVENTS of them, nearest first: one event per reservation, its status in the summary, its pool,
nodes and GPUs in the description.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

from django.utils import timezone

from capacity.access import scope_for
from capacity.api.views import render_reservations
from capacity.models import Reservation

from .models import CalendarFeed

DAYS_BACK = 30
MAX_EVENTS = 2000
STATUS = {"placed": "CONFIRMED", "pending": "TENTATIVE", "queued": "TENTATIVE"}  # else CANCELLED


def feed_of(user, *, rotate: bool = False) -> CalendarFeed:
    """Return the user's feed, made on first use; `rotate` gives it a new token (the old URL stops)."""
    feed = CalendarFeed.objects.filter(owner=user).first()
    if feed is None:
        return CalendarFeed.objects.create(owner=user, token=secrets.token_urlsafe(32))
    if rotate:
        feed.token = secrets.token_urlsafe(32)
        feed.save(update_fields=["token"])
    return feed


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace(";", "\\;").replace(",", "\\,").replace("\n", "\\n")


def _fold(line: str) -> str:
    """Fold a content line at 75 octets, continuation lines starting with a space (RFC 5545 3.1)."""
    raw = line.encode()
    if len(raw) <= 75:
        return line
    parts, start, limit = [], 0, 75
    while start < len(raw):
        end = min(start + limit, len(raw))
        while end < len(raw) and (raw[end] & 0xC0) == 0x80:  # never split a UTF-8 character
            end -= 1
        parts.append(raw[start:end].decode())
        start, limit = end, 74
    return "\r\n ".join(parts)


def _stamp(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")


def calendar(feed: CalendarFeed, base_url: str, now: datetime | None = None) -> str:
    """Return the feed's iCalendar text."""
    now = now or timezone.now()
    scope = scope_for(feed.owner)
    found = Reservation.objects.filter(ends_at__gte=now - timedelta(days=DAYS_BACK)).select_related(
        "tenant", "pool"
    )
    if scope.tenants is not None:
        found = found.filter(tenant__slug__in=scope.tenants)
    reservations = list(found.order_by("starts_at", "pk")[:MAX_EVENTS])
    shown = render_reservations(reservations, scope)
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//Berth//GPU bookings//EN",
        "CALSCALE:GREGORIAN",
        "METHOD:PUBLISH",
        f"X-WR-CALNAME:{_escape('Berth: ' + feed.owner.get_username())}",
    ]
    for reservation, data in zip(reservations, shown, strict=True):
        devices = sum(len(a.get("atoms") or []) for a in data["allocations"])
        nodes = sorted({a["nodeId"] for a in data["allocations"] if a.get("nodeId")})
        asked = ", ".join(
            f"{d.get('count', 1)} {d.get('class', 'gpu')}"
            for d in reservation.request.get("input", {}).get("devices", [])
        )
        summary = f"[{reservation.status}] {reservation.tenant.slug}: {asked or 'booking'} on {reservation.pool.slug}"
        description = "\n".join(
            [
                f"Reservation {reservation.pk} of {reservation.tenant.slug} in pool {reservation.pool.slug}",
                f"Status: {reservation.status}",
                f"Nodes: {', '.join(nodes) if nodes else 'none yet'}",
                f"GPUs and slices: {devices}",
                f"{base_url}/reservations/{reservation.pk}/",
            ]
        )
        lines += [
            "BEGIN:VEVENT",
            f"UID:reservation-{reservation.pk}@berth",
            f"DTSTAMP:{_stamp(now)}",
            f"DTSTART:{_stamp(reservation.starts_at)}",
            f"DTEND:{_stamp(reservation.ends_at)}",
            f"SUMMARY:{_escape(summary)}",
            f"DESCRIPTION:{_escape(description)}",
            f"LOCATION:{_escape(reservation.pool.slug + (': ' + ', '.join(nodes) if nodes else ''))}",
            f"STATUS:{STATUS.get(reservation.status, 'CANCELLED')}",
            f"URL:{base_url}/reservations/{reservation.pk}/",
            "END:VEVENT",
        ]
    lines.append("END:VCALENDAR")
    return "".join(_fold(line) + "\r\n" for line in lines)
