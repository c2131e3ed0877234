"""The usage report page: GPU-hours booked and used, as a stacked bar chart and the table under it.

The chart is drawn on the server (SVG, no script): one column per bucket, the booked hours of
each group stacked in the group's colour (the hours booked ahead, after now, paler on top), a dark
tick at the hours used; each bar says its figures in a hover title, and the table under it holds
every number. The period is whole UTC days, `to` included, as the API reads it: the fields show
the default period, so pressing Show unchanged gives the same figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from capacity.port import CapacityError, scope_for
from config.replica import replica_reads
from config.web import login_required, page
from usage.api import columns as report_columns
from usage.report import BUCKETS, GROUPS, heading, usage_period, usage_report

PALETTE = ("#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#319795", "#b7791f", "#4a5568")
WIDTH, HEIGHT, LEFT, BOTTOM = 900, 220, 48, 24
DEFAULT_DAYS = 14


@dataclass
class Segment:
    x: float
    y: float
    width: float
    height: float
    colour: str
    title: str
    ahead: bool = False


@dataclass
class Chart:
    """The SVG's parts: stacked segments, used ticks, axis labels, the legend."""

    segments: list[Segment] = field(default_factory=list)
    ticks: list[tuple[float, float, float, str]] = field(default_factory=list)  # x1, x2, y, title
    labels: list[tuple[float, str]] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)
    most: float = 0.0
    width: int = WIDTH
    height: int = HEIGHT + BOTTOM
    left: int = LEFT
    bottom: int = HEIGHT


def build_chart(rows: list[dict], group_by: list[str]) -> Chart:
    """Stack each bucket's booked hours by group; mark its used hours."""
    names = {"tenant": "tenantId", "pool": "poolId", "model": "gpuModel"}
    key = [names[g] for g in group_by]
    buckets = sorted({r["bucket"] for r in rows})
    groups = sorted({" / ".join(str(r[k]) for k in key) for r in rows})
    colour = {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)}
    totals = {
        b: sum(r["gpuHoursBooked"] + r["gpuHoursBookedAhead"] for r in rows if r["bucket"] == b)
        for b in buckets
    }
    most = max(totals.values(), default=0.0) or 1.0
    chart = Chart(legend=list(colour.items()), most=round(most, 1))
    step = (WIDTH - LEFT) / max(len(buckets), 1)
    for i, b in enumerate(buckets):
        x = LEFT + i * step + step * 0.1
        width = step * 0.8
        y = float(HEIGHT)
        ordered = sorted(
            (r for r in rows if r["bucket"] == b), key=lambda r: " / ".join(str(r[k]) for k in key)
        )
        # Booked to date first, each group's hours ahead above them all: the bar's solid part is the past.
        for ahead in (False, True):
            for r in ordered:
                group = " / ".join(str(r[k]) for k in key)
                hours = r["gpuHoursBookedAhead"] if ahead else r["gpuHoursBooked"]
                if ahead and not hours:
                    continue
                height = HEIGHT * hours / most
                y -= height
                if ahead:
                    title = f"{b} {group}: {hours:.1f} GPU-hours booked ahead (after now)"
                else:
                    title = f"{b} {group}: {hours:.1f} GPU-hours booked, {r['gpuHoursUsed']:.1f} used"
                chart.segments.append(
                    Segment(
                        round(x, 1),
                        round(y, 1),
                        round(width, 1),
                        round(height, 1),
                        colour[group],
                        title,
                        ahead,
                    )
                )
        used = sum(r["gpuHoursUsed"] for r in rows if r["bucket"] == b)
        booked = sum(r["gpuHoursBooked"] for r in rows if r["bucket"] == b)
        tick_y = round(HEIGHT - HEIGHT * used / most, 1)
        chart.ticks.append(
            (round(x, 1), round(x + width, 1), tick_y, f"{b}: {used:.1f} of {booked:.1f} GPU-hours used")
        )
        chart.labels.append((round(x + width / 2, 1), b[5:]))
    return chart


@login_required
@replica_reads
def usage(request: HttpRequest) -> HttpResponse:
    """Show GPU-hours booked and used for the period and grouping the form asks (GET)."""
    q = request.GET
    group_by = [g for g in GROUPS if g in q.getlist("groupBy")] or ["tenant"]
    bucket = q.get("bucket") if q.get("bucket") in BUCKETS else "day"
    now = timezone.now()
    error = error_field = ""
    rows: list[dict] = []
    first, last = usage_period(None, None, now=now, days=DEFAULT_DAYS)
    try:
        first, last = usage_period(q.get("from"), q.get("to"), now=now, days=DEFAULT_DAYS)
        found = usage_report(first, last, group_by, bucket, scope_for(request.user), now=now)
        rows = [r.as_dict() for r in found]
    except CapacityError as exc:
        error = exc.message
        # The error sits next to the field it names; a period too long or backwards is the `to`'s.
        error_field = "from" if error.startswith("from:") else "to"
    columns = report_columns(group_by)
    context = {
        "nav": "usage",
        "rows": rows,
        "columns": columns,
        "headings": [heading(c, bucket) for c in columns],
        "cells": [[r.get(c, "") for c in columns] for r in rows],
        "chart": build_chart(rows, group_by),
        "group_by": group_by,
        "groups": list(GROUPS),
        "bucket": bucket,
        "buckets": BUCKETS,
        # What was asked stays in the fields (a wrong date to correct); else the period shown.
        "start": q.get("from") or first.isoformat(),
        "end": q.get("to") or last.isoformat(),
        "first": first,
        "last": last,
        "error": error,
        "error_field": error_field,
        "booked": round(sum(r["gpuHoursBooked"] for r in rows), 1),
        "ahead": round(sum(r["gpuHoursBookedAhead"] for r in rows), 1),
        "used": round(sum(r["gpuHoursUsed"] for r in rows), 1),
    }
    if not error:
        # The same rows from the API: the period shown, its grouping and buckets, as CSV or JSON.
        query = {
            "from": first.isoformat(),
            "to": last.isoformat(),
            "groupBy": ",".join(group_by),
            "bucket": bucket,
        }
        api = reverse("api-usage")
        context["csv_url"] = f"{api}?{urlencode({**query, 'format': 'csv'})}"
        context["json_url"] = f"{api}?{urlencode(query)}"
    return page(request, "usage/usage.html", context)
