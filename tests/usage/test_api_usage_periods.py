"""A usage period means one thing everywhere: whole UTC days, `to` included, nothing after now booked.

lab: node-a and node-b, 4 GPUs each, in lab-pool. Bookings in the past are made through the
services as of their start (as the history tests do); bookings ahead through the API.
"""

import dataclasses
import io
import json
import re
from datetime import UTC, datetime, time, timedelta

import pytest
from django.core.management import call_command
from django.test import Client

from capacity import services
from capacity.conf import placer_config


def ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


def book(gpus: int, start: datetime, hours: int, *, now: datetime | None = None):
    """Book acme's GPUs in lab-pool from `start` for `hours`, as of `now` (default: as of the start)."""
    data = {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": gpus}],
        "during": {"start": ms(start), "end": ms(start + timedelta(hours=hours))},
    }
    config = dataclasses.replace(placer_config(), random=None)
    reservation = services.reserve(data, now=now or start, config=config).reservation
    assert reservation.status == "placed"
    return reservation


def midnight(days_from_today: int) -> datetime:
    return datetime.combine(datetime.now(UTC).date() + timedelta(days=days_from_today), time(), tzinfo=UTC)


def totals(rows) -> tuple[float, float]:
    return (
        round(sum(r["gpuHoursBooked"] for r in rows), 3),
        round(sum(r["gpuHoursBookedAhead"] for r in rows), 3),
    )


def figures(html: str) -> tuple[str, str]:
    """Return the page's headline and its table, the figures a reader compares."""
    headline = re.search(r"<h2>(.*?)</h2>", html, re.S).group(1)
    table = re.search(r'<table class="data" id="usage-table">.*?</table>', html, re.S).group(0)
    return headline, table


def test_the_pages_default_period_sent_again_gives_the_same_figures_as_the_api_and_command(
    acme, as_acme, lab
):
    # 2 h on the default's first day (13 days ago), and a booking that ran from the day before
    # into it: its last 2 h are in the period, its first 2 h are not.
    book(1, midnight(-13) + timedelta(hours=1), 2)
    book(1, midnight(-13) - timedelta(hours=2), 4)
    page = Client()
    page.force_login(acme)
    default = page.get("/usage/").text
    first = re.search(r'id="id_from" value="([^"]+)"', default).group(1)
    last = re.search(r'id="id_to" value="([^"]+)"', default).group(1)
    assert (first, last) == (midnight(-13).date().isoformat(), midnight(0).date().isoformat())
    assert figures(default)[0] == "4.0 GPU-hours booked, 0.0 used"
    again = page.get(f"/usage/?from={first}&to={last}&groupBy=tenant&bucket=day").text
    assert figures(again) == figures(default)

    api = as_acme.get(f"/api/v1/usage?from={first}&to={last}").json()
    assert (api["from"], api["to"]) == (first, last) and totals(api["rows"]) == (4.0, 0.0)
    assert as_acme.get(f"/api/v1/usage?from={first}&to={last}&format=csv").content.decode().count("\n") == 2
    out = io.StringIO()
    call_command("usage_report", f"--from={first}", f"--to={last}", stdout=out)
    assert out.getvalue().splitlines()[-1] == "total: 4.0 GPU-hours booked, 0.0 used"
    # The day before the period holds the booking's other 2 h, and only those.
    day_before = midnight(-14).date().isoformat()
    assert totals(as_acme.get(f"/api/v1/usage?from={day_before}&to={day_before}").json()["rows"]) == (
        2.0,
        0.0,
    )


def test_to_is_included_and_from_equal_to_to_is_that_whole_day(as_acme, lab, ask):
    tomorrow = midnight(1)
    body = {
        **ask(2),
        "during": {"start": ms(tomorrow + timedelta(hours=1)), "end": ms(tomorrow + timedelta(hours=3))},
    }
    body.pop("duration")
    assert as_acme.post("/api/v1/reservations", body, format="json").json()["status"] == "placed"
    day = tomorrow.date().isoformat()
    rows = as_acme.get(f"/api/v1/usage?from={day}&to={day}").json()["rows"]
    assert [(r["bucket"], r["gpuHoursBooked"], r["gpuHoursBookedAhead"]) for r in rows] == [(day, 0.0, 4.0)]
    today = midnight(0).date().isoformat()
    assert as_acme.get(f"/api/v1/usage?from={today}&to={today}").json()["rows"] == []


def test_hours_after_now_are_booked_ahead_never_booked_to_date(as_acme, lab, ask):
    book(1, midnight(-1) + timedelta(hours=3), 5)  # 5 h yesterday
    start = datetime.now(UTC) + timedelta(hours=1)
    body = {**ask(2), "during": {"start": ms(start), "end": ms(start + timedelta(hours=2))}}
    body.pop("duration")
    assert as_acme.post("/api/v1/reservations", body, format="json").json()["status"] == "placed"
    yesterday, today = midnight(-1).date(), midnight(0).date()
    answers = {
        to: totals(as_acme.get(f"/api/v1/usage?from={yesterday}&to={to}").json()["rows"])
        for to in (today, today + timedelta(days=1), today + timedelta(days=5))
    }
    # Booked to date is the same however far `to` reaches; the 4 h ahead are apart (all of them
    # once `to` reaches tomorrow; today's part of them with to=today).
    assert {booked for booked, _ahead in answers.values()} == {5.0}
    assert answers[today + timedelta(days=1)][1] == answers[today + timedelta(days=5)][1] == 4.0
    assert answers[today][1] <= 4.0


@pytest.mark.parametrize(
    ("query", "name", "message"),
    [
        ("from=2026-13-01", "from", "from: a date (2026-12-01); 2026-13-01 is no day of the calendar"),
        ("from=2026-02-30", "from", "from: a date (2026-12-01); 2026-02-30 is no day of the calendar"),
        ("to=2026-13-01", "to", "to: a date (2026-12-01); 2026-13-01 is no day of the calendar"),
        ("to=0000-01-01", "to", "to: a date (2026-12-01); 0000-01-01 is no day of the calendar"),
        ("to=9999-12-31", "to", "to: at most 9999-12-30"),
        ("from=2026-12-01T08:00Z", "from", "from: a date (2026-12-01), not a time: whole UTC days"),
        ("from=2026-1-1", "from", "from: a date (2026-12-01) as YYYY-MM-DD"),
    ],
)
def test_an_impossible_date_is_refused_naming_its_parameter_on_the_api_and_the_page(
    as_acme, acme, lab, query, name, message
):
    answer = as_acme.get(f"/api/v1/usage?{query}")
    assert answer.status_code == 400 and answer["Content-Type"] == "application/json"
    assert answer.json() == {"code": "INVALID_INPUT", "message": message}
    # Asked for CSV, an error is still JSON, as every API error is.
    as_csv = as_acme.get(f"/api/v1/usage?{query}&format=csv")
    assert as_csv.status_code == 400 and as_csv["Content-Type"] == "application/json"
    assert as_csv.json() == {"code": "INVALID_INPUT", "message": message}

    page = Client()
    page.force_login(acme)
    html = page.get(f"/usage/?{query}")
    assert html.status_code == 200
    field = re.search(r'<div class="field has-error">(.*?)</div>', html.text, re.S).group(1)
    assert f'id="id_{name}"' in field and "aria-invalid" in field
    assert f'<span class="field-error" role="alert" id="usage-error">{message}</span>' in field
    assert html.text.count("has-error") == 1 and "<table" not in html.text


def test_the_page_table_says_its_headings_in_words(acme, lab):
    book(1, midnight(-1) + timedelta(hours=1), 1)
    page = Client()
    page.force_login(acme)
    html = page.get("/usage/?groupBy=tenant&groupBy=pool&groupBy=model&bucket=week").text
    head = re.search(r"<thead>(.*?)</thead>", html, re.S).group(1)
    assert re.findall(r"<th[^>]*>(.*?)</th>", head) == [
        "Tenant",
        "Pool",
        "GPU model",
        "Week of",
        "GPU-hours booked",
        "GPU-hours used",
        "GPU-hours booked ahead",
        "GPU-hours lent",
    ]


def test_the_command_json_names_the_period_it_read(lab):
    out = io.StringIO()
    call_command("usage_report", "--to=2026-12-10", "--json", stdout=out)
    answer = json.loads(out.getvalue())
    assert (answer["from"], answer["to"], answer["rows"]) == ("2026-11-11", "2026-12-10", [])


def test_the_page_links_the_same_rows_as_csv_and_json(acme, as_acme, lab):
    book(1, midnight(-1) + timedelta(hours=1), 2)
    page = Client()
    page.force_login(acme)
    html = page.get("/usage/?groupBy=tenant&groupBy=pool&bucket=week").text
    csv_url = re.search(r'id="usage-csv" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    json_url = re.search(r'id="usage-json" href="([^"]+)"', html).group(1).replace("&amp;", "&")
    assert "groupBy=tenant%2Cpool" in csv_url and "bucket=week" in csv_url and "format=csv" in csv_url
    answer = page.get(csv_url)
    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/csv")
    assert answer.content.decode().count("\n") == 2  # the header and acme's one row
    assert totals(page.get(json_url).json()["rows"]) == (2.0, 0.0)
    assert 'id="usage-csv"' not in page.get("/usage/?from=nonsense").text  # no rows to link
