"""GPU use where people read reservations: a column in the list, the list's CSV, and a time series.

lab: node-a and node-b, 4 GPUs each, in lab-pool. acme books 2 GPUs starting now; samples say the
first GPU ran at 30 % and the second at 70 % for ten minutes, then nothing for five, then 90 % for
five (a gap in the line).
"""

import csv
import io
import re
from datetime import timedelta

from django.test import Client

from capacity.models import DeviceBooking, Reservation
from inventory.models import DeviceSample
from usage.figures import usage_series


def sampled(as_acme, ask):
    held = as_acme.post("/api/v1/reservations", ask(2), format="json").json()
    reservation = Reservation.objects.get(pk=held["id"])
    first, second = DeviceBooking.objects.filter(allocation__reservation=reservation).order_by(
        "device__index"
    )
    start = reservation.starts_at.replace(second=0, microsecond=0)
    rows = []
    for m in range(20):
        if 10 <= m < 15:
            continue
        for booking, pct in ((first, 30 if m < 10 else 90), (second, 70 if m < 10 else 90)):
            rows.append(
                DeviceSample(
                    device_id=booking.device_id, minute=start + timedelta(minutes=m), gpu_percent=pct
                )
            )
    DeviceSample.objects.bulk_create(rows)
    return reservation, start


def test_the_list_shows_each_reservations_mean_gpu_use_and_the_csv_carries_it(as_acme, acme, lab, ask):
    reservation, _start = sampled(as_acme, ask)
    other = as_acme.post("/api/v1/reservations", ask(1), format="json").json()
    page = Client()
    page.force_login(acme)
    html = page.get("/reservations/").text
    row = re.search(rf'<tr id="reservation-{reservation.pk}".*?</tr>', html, re.S).group(0)
    cell = re.search(r"<td class=\"nowrap usage\">.*?</td>", row).group(0)
    assert cell == (
        '<td class="nowrap usage"><span title="90.0 % at the 95th percentile over 30 device-minutes">'
        "63.3 %</span></td>"
    ), cell
    unsampled = re.search(rf'<tr id="reservation-{other["id"]}".*?</tr>', html, re.S).group(0)
    assert '<td class="nowrap usage"><span class="muted">—</span></td>' in unsampled
    assert 'id="reservations-csv"' in html

    answer = page.get("/reservations/?status=placed&format=csv")
    assert answer["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(answer.content.decode())))
    assert [int(r["id"]) for r in rows] == [other["id"], reservation.pk]  # newest first, as listed
    mine = rows[1]
    assert (mine["tenantId"], mine["poolId"], mine["status"]) == ("acme", "lab-pool", "placed")
    assert (mine["gpuPercentMean"], mine["gpuPercentP95"], mine["samples"]) == ("63.3", "90.0", "30")
    assert len(mine["atoms"].split()) == 2 and mine["nodes"] in ("node-a", "node-b")
    assert rows[0]["gpuPercentMean"] == "" and rows[0]["samples"] == ""
    # A filter that matches nothing gives the header alone.
    empty = page.get("/reservations/?status=released&format=csv").content.decode()
    assert empty.splitlines() == [",".join(csv.DictReader(io.StringIO(answer.content.decode())).fieldnames)]


def test_the_reservation_page_draws_its_gpu_use_over_time_with_gaps_where_no_sample(as_acme, acme, lab, ask):
    reservation, start = sampled(as_acme, ask)
    series = usage_series(reservation, now=start + timedelta(minutes=20))
    assert series.step_text == "minute" and len(series.values) == 20
    assert series.values[:10] == [50.0] * 10 and series.values[10:15] == [None] * 5
    assert series.values[15:] == [90.0] * 5
    lines = series.lines()
    assert len(lines) == 2 and lines[0].startswith("0.0,60.0") and lines[1].endswith("600.0,12.0")
    # A day-long window: one point every 12 minutes.
    assert usage_series(reservation, now=start + timedelta(hours=24)).step_text == "12 minutes"

    page = Client()
    page.force_login(acme)
    html = page.get(f"/reservations/{reservation.pk}/").text
    assert 'id="usage-series"' in html and html.count('<polyline class="use"') >= 1
