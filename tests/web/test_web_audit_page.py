"""The Audit page: operators read the export's rows in the browser, filtered and paged, with its CSV and JSON."""

import csv
import io
import re
from datetime import UTC, datetime, timedelta

import pytest

from trail.record import record

from web_helpers import HX, error_next_to, is_full_page


def _objects(html: str) -> list[str]:
    rows = re.search(r'id="audit-rows".*?</table>', html, re.S)
    return re.findall(r'\?object=[^"]*">([^<]*)</a>', rows[0]) if rows else []


@pytest.fixture
def rows(db, operator):
    """Sixty quota changes by olga, newest quota:acme/r59, and one share change by system."""
    from trail.context import acting_as

    with acting_as("olga"):
        for i in range(60):
            record("quota.set", f"quota:acme/r{i}", before=None, after={"limit": i})
    record("share.set", "share:lab-pool/acme", before={"guaranteed_gpus": 1}, after={"guaranteed_gpus": 2})


def test_the_page_lists_newest_first_and_pages_older_and_newer(rows, op):
    html = op.get("/audit/").text  # olga's sign-in (the client's) is the newest
    assert _objects(html)[:3] == ["user:olga", "share:lab-pool/acme", "quota:acme/r59"]
    assert len(_objects(html)) == 50
    assert "{&quot;guaranteed_gpus&quot;: 1} → {&quot;guaranteed_gpus&quot;: 2}" in html
    older = re.search(r'href="([^"]+)"[^>]*rel="next"', html)[1].replace("&amp;", "&")
    page2 = op.get(older, **HX, HTTP_HX_TARGET="audit-list")
    assert not is_full_page(page2.text) and "HX-Request" in page2["Vary"]
    assert _objects(page2.text) == [f"quota:acme/r{i}" for i in range(11, -1, -1)]
    assert 'rel="next"' not in page2.text
    newer = re.search(r'href="([^"]+)"[^>]*rel="prev"', page2.text)[1].replace("&amp;", "&")
    assert _objects(op.get(newer).text) == _objects(html)


def test_filters_narrow_the_rows_and_the_links_carry_them(rows, op):
    html = op.get("/audit/", {"actor": "system", "action": "share.set"}).text
    assert _objects(html) == ["share:lab-pool/acme"]
    csv_url = re.search(r'id="audit-csv" href="([^"]+)"', html)[1].replace("&amp;", "&")
    assert csv_url.startswith("/api/v1/audit?") and "actor=system" in csv_url and "format=csv" in csv_url
    exported = list(csv.DictReader(io.StringIO(op.get(csv_url).content.decode())))
    assert [r["object"] for r in exported] == ["share:lab-pool/acme"]
    json_url = re.search(r'id="audit-json" href="([^"]+)"', html)[1].replace("&amp;", "&")
    assert [r["object"] for r in op.get(json_url).json()["results"]] == ["share:lab-pool/acme"]
    assert _objects(op.get("/audit/", {"object": "quota:acme/r3"}).text) == ["quota:acme/r3"]
    later = (datetime.now(UTC) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    html = op.get("/audit/", {"from": later}).text  # the browser's date-time field: read as UTC
    assert _objects(html) == [] and 'id="no-audit"' in html
    assert f"from={later[:10]}" in re.search(r'id="audit-json" href="([^"]+)"', html)[1]


@pytest.mark.parametrize(
    ("query", "field", "message"),
    [
        ({"from": "yesterday"}, "from", "a time such as 2026-05-01 09:00 (UTC)"),
        ({"to": "0001-01-01T00:00:00+14:00"}, "to", "a time between 1970 and 9998"),
        ({"from": "2026-05-02T00:00", "to": "2026-05-01T00:00"}, "to", "after From"),
        ({"actor": "x" * 151}, "actor", "at most 150 characters"),
    ],
)
def test_a_bad_filter_shows_its_error_next_to_it_and_lists_nothing(rows, op, query, field, message):
    answer = op.get("/audit/", query)
    assert answer.status_code == 400 and message in error_next_to(answer.text, field)
    assert _objects(answer.text) == [] and "Nothing listed: correct the filter above." in answer.text
    assert op.get("/audit/", query, **HX, HTTP_HX_TARGET="audit-body").status_code == 200


def test_a_cursor_it_never_gave_out_shows_the_newest_and_says_so(rows, op):
    html = op.get("/audit/", {"cursor": "forged"}).text
    assert "That page link is not one this page gave out" in html and _objects(html)[0] == "user:olga"
