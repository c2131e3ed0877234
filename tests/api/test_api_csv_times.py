"""Every CSV Berth writes carries its times in one shape: RFC 3339 in UTC, microseconds, `Z`.

pandas is not installed here: the cells are read with the csv module and parsed with datetime, and
every time cell must match the one shape, so a reader gives the column one format.
"""

import csv
import io
import re
from datetime import UTC, datetime, timedelta

from django.utils import timezone

TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")
DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def times(found: list[dict], *columns: str) -> list[str]:
    """Return the columns' cells, each checked to be the one shape and to read back as UTC."""
    cells = [row[c] for row in found for c in columns if row[c]]
    for cell in cells:
        assert TIME.fullmatch(cell), cell
        assert datetime.strptime(cell, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC) <= datetime.max.replace(
            tzinfo=UTC
        )
    return cells


def test_the_reservations_usage_and_audit_csvs_write_one_time_shape(
    as_acme, as_operator, client_for, acme, lab, ask
):
    whole_hour = timezone.now().replace(minute=0, second=0, microsecond=0) + timedelta(hours=2)
    made = [
        as_acme.post("/api/v1/reservations", ask(1), format="json"),  # from now: a time with fractions
        as_acme.post(
            "/api/v1/reservations",
            {
                **{k: v for k, v in ask(1).items() if k != "duration"},
                "during": {
                    "start": whole_hour.isoformat(),
                    "end": (whole_hour + timedelta(hours=1)).isoformat(),
                },
            },
            format="json",
        ),
    ]
    assert [r.status_code for r in made] == [201, 201], made[0].json()
    as_acme.post(f"/api/v1/reservations/{made[0].json()['id']}/release")

    page = client_for()
    page.force_login(acme)
    listed = rows(page.get("/reservations/", {"format": "csv"}).content.decode())
    assert len(listed) == 2
    assert len(times(listed, "start", "end", "releasedAt")) == 5

    usage = rows(as_acme.get("/api/v1/usage.csv", {"groupBy": "tenant,pool"}).content.decode())
    assert usage and all(DAY.fullmatch(row["bucket"]) for row in usage)  # a bucket is a day, not a time

    audit = as_operator.get("/api/v1/audit.csv", {"page_size": 50})
    assert audit["Content-Type"].startswith("text/csv")
    assert len(times(rows(audit.content.decode()), "at")) >= 3


def test_the_csv_operations_answer_csv_whatever_the_accept_header_and_errors_as_json(as_acme, as_operator):
    usage = as_acme.get("/api/v1/usage.csv", HTTP_ACCEPT="application/json")
    assert usage["Content-Type"].startswith("text/csv")
    assert usage.content.decode().splitlines()[0].startswith("tenantId,")
    bad = as_acme.get("/api/v1/usage.csv", {"bucket": "year"})
    assert (bad.status_code, bad["Content-Type"], bad.json()["code"]) == (
        400,
        "application/json",
        "INVALID_INPUT",
    )
    refused = as_acme.get("/api/v1/audit.csv")
    assert (refused.status_code, refused.json()["code"]) == (403, "FORBIDDEN")
    # The JSON operations still take ?format=csv, as before; a format they do not know is ignored.
    assert as_acme.get("/api/v1/usage", {"format": "csv"})["Content-Type"].startswith("text/csv")
    assert as_operator.get("/api/v1/pools", {"format": "xml"}).json()["results"] == []
