"""GET /api/v1/usage: GPU-hours booked and used, exact, per group and bucket; tenants see their own.

lab: node-a and node-b, 4 GPUs each, in lab-pool; acme and globex book there.
"""

from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from capacity.models import DeviceBooking
from capacity.services import EVERYONE
from inventory.models import DeviceSample
from usage.report import usage_report


def timed(ask, gpus, during, **extra):
    body = {**ask(gpus, **extra), "during": during}
    body.pop("duration")
    return body


def window(hours_from, hours):
    start = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) + timedelta(hours=hours_from)
    return {
        "start": int(start.timestamp() * 1000),
        "end": int((start + timedelta(hours=hours)).timestamp() * 1000),
    }, start


def test_booked_hours_are_each_bookings_overlap_with_the_period_per_tenant_and_day(
    as_operator, as_acme, lab, ask
):
    during, start = window(2, 10)
    acme = as_acme.post("/api/v1/reservations", timed(ask, 2, during), format="json").json()
    assert acme["status"] == "placed"
    # Used: 2 GPUs at 50 % for 60 minutes = 1 GPU-hour.
    devices = DeviceBooking.objects.filter(allocation__reservation_id=acme["id"]).values_list(
        "device_id", flat=True
    )
    DeviceSample.objects.bulk_create(
        DeviceSample(device_id=d, minute=start + timedelta(minutes=m), gpu_percent=50)
        for d in devices
        for m in range(60)
    )
    first, last = start.date(), (start + timedelta(hours=10)).date()
    # Read four hours into the booking: 2 GPUs × 4 h booked to date, the other 6 h booked ahead.
    rows = [
        r.as_dict()
        for r in usage_report(
            first, last, ["tenant", "pool"], "day", EVERYONE, now=start + timedelta(hours=4)
        )
    ]
    # The ten hours may cross midnight (a test run late in the day): one row a day they touch.
    days = sorted({(start + timedelta(hours=h)).date().isoformat() for h in range(10)})
    assert [r["bucket"] for r in rows] == days
    assert {(r["tenantId"], r["poolId"]) for r in rows} == {("acme", "lab-pool")}
    assert sum(r["gpuHoursBooked"] for r in rows) == 8.0
    assert sum(r["gpuHoursBookedAhead"] for r in rows) == 12.0
    assert sum(r["gpuHoursUsed"] for r in rows) == 1.0
    # Asked now, before it starts, all 20 hours are ahead and none booked to date.
    period = urlencode({"from": first.isoformat(), "to": last.isoformat(), "groupBy": "tenant,pool"})
    rows = as_operator.get(f"/api/v1/usage?{period}").json()["rows"]
    assert sum(r["gpuHoursBooked"] for r in rows) == 0.0
    assert sum(r["gpuHoursBookedAhead"] for r in rows) == 20.0


def test_tenants_see_only_their_own_rows_and_csv_has_the_same_columns(as_acme, as_globex, lab, ask):
    during, start = window(1, 2)
    assert as_acme.post("/api/v1/reservations", timed(ask, 1, during), format="json").status_code == 201
    assert (
        as_globex.post(
            "/api/v1/reservations", timed(ask, 1, during, tenant="globex"), format="json"
        ).status_code
        == 201
    )
    period = f"from={start.date().isoformat()}&to={(start + timedelta(days=2)).date().isoformat()}"
    mine = as_acme.get(f"/api/v1/usage?{period}").json()["rows"]
    assert {r["tenantId"] for r in mine} == {"acme"} and sum(r["gpuHoursBookedAhead"] for r in mine) == 2.0
    text = as_acme.get(f"/api/v1/usage?{period}&format=csv")
    assert text["Content-Type"].startswith("text/csv")
    lines = text.content.decode().splitlines()
    assert lines[0] == "tenantId,bucket,gpuHoursBooked,gpuHoursUsed,gpuHoursBookedAhead,gpuHoursLent"
    assert lines[1].startswith("acme,")


def test_an_empty_reports_csv_header_follows_group_by(as_acme, lab):
    import io

    from django.core.management import call_command

    figures = "bucket,gpuHoursBooked,gpuHoursUsed,gpuHoursBookedAhead,gpuHoursLent"
    quiet = "from=2020-01-01&to=2020-01-31"  # a month nothing was booked in
    for group_by, keys in [
        ("tenant", "tenantId"),
        ("pool,model", "poolId,gpuModel"),
        ("model,tenant", "tenantId,gpuModel"),
    ]:
        text = as_acme.get(f"/api/v1/usage.csv?{quiet}&groupBy={group_by}").content.decode()
        assert text == f"{keys},{figures}\n", group_by
        out = io.StringIO()
        call_command(
            "usage_report",
            "--from=2020-01-01",
            "--to=2020-01-31",
            f"--group-by={group_by}",
            "--csv",
            stdout=out,
        )
        assert out.getvalue() == text


def test_a_bad_period_or_grouping_is_refused_with_the_reason(as_acme, lab):
    for query, message in [
        ("from=2026-12-10&to=2026-12-01", "to: must be on or after from (2026-12-10)"),
        ("from=2025-01-01&to=2026-12-01", "the period is at most 366 days"),
        ("groupBy=colour", "groupBy: one or more of tenant, pool, model, each once"),
        ("bucket=hour", "bucket: one of day, week, month"),
        ("from=yesterday", "from: a date (2026-12-01) as YYYY-MM-DD"),
        ("from=2025-11-30&to=2026-12-01", "the period is at most 366 days"),  # 367 days, both ends in
    ]:
        answer = as_acme.get(f"/api/v1/usage?{query}")
        assert answer.status_code == 400 and answer.json()["message"].startswith(message), (
            query,
            answer.json(),
        )
    assert as_acme.get("/api/v1/usage?from=2025-12-01&to=2026-12-01").status_code == 200  # 366 days


def test_the_command_prints_the_same_rows(as_acme, lab, ask):
    import io
    import json

    from django.core.management import call_command

    during, start = window(1, 3)
    assert as_acme.post("/api/v1/reservations", timed(ask, 2, during), format="json").status_code == 201
    period = {"start": start.date().isoformat(), "end": (start + timedelta(days=2)).date().isoformat()}
    out = io.StringIO()
    call_command("usage_report", f"--from={period['start']}", f"--to={period['end']}", "--json", stdout=out)
    rows = json.loads(out.getvalue())["rows"]
    api = as_acme.get(f"/api/v1/usage?from={period['start']}&to={period['end']}").json()["rows"]
    assert rows == api and sum(r["gpuHoursBookedAhead"] for r in rows) == 6.0
    table = io.StringIO()
    call_command("usage_report", f"--from={period['start']}", f"--to={period['end']}", stdout=table)
    lines = table.getvalue().splitlines()
    assert lines[0] == f"{period['start']} to {period['end']} (UTC, both whole days)"
    headings = (
        "Tenant",
        "Day",
        "GPU-hours booked",
        "GPU-hours used",
        "GPU-hours booked ahead",
        "GPU-hours lent",
    )
    assert [h.strip() for h in lines[1].split("  ") if h.strip()] == list(headings)
    assert lines[-1] == "total: 0.0 GPU-hours booked, 0.0 used; 6.0 booked ahead (after now)"


def test_the_usage_page_draws_the_booked_hours_stacked_with_the_table_under_them(as_acme, acme, lab, ask):
    import re

    from django.test import Client

    during, start = window(1, 3)
    assert as_acme.post("/api/v1/reservations", timed(ask, 2, during), format="json").status_code == 201
    page = Client()
    page.force_login(acme)
    day = start.date().isoformat()
    html = page.get(
        f"/usage/?from={day}&to={(start + timedelta(days=2)).date().isoformat()}&groupBy=tenant"
    ).text
    assert "0.0 GPU-hours booked, 0.0 used; 6.0 booked ahead" in html
    # A bar's segment per day the booking touched (it may cross midnight), each saying its figures.
    assert re.search(
        r"<title>\d{4}-\d\d-\d\d acme: [\d.]+ GPU-hours booked ahead \(after now\)</title>", html
    )
    assert '<table class="data" id="usage-table">' in html and "<td>acme</td>" in html
    bad = page.get("/usage/?from=yesterday").text
    assert 'id="usage-error"' in bad and "from: a date (2026-12-01)" in bad
    assert '<th scope="col">Tenant</th>' in html and '<th scope="col">GPU-hours booked</th>' in html
