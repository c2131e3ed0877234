"""A booking awaiting approval says so wherever it is listed: the form's answer, the list, the API, the timeline, the calendar."""

import csv
import io
import re

import icalendar
import pytest

from capacity.models import Reservation
from policy.pool_policy import set_policy
from webhooks.calendar import calendar, feed_of

from web_helpers import HX

AWAITING_BADGE = "⌛ awaiting approval"


@pytest.fixture
def held(two_hosts, book):
    """A 4-GPU two-day booking in a pool that asks approval above 100 GPU-hours: awaiting."""
    set_policy("lab-pool", {"approval_above_gpu_hours": 100})
    reservation = book(gpus=4, duration="2d")
    assert reservation.condition("AwaitingApproval"), reservation.conditions
    return reservation


def _row(html: str, pk: int) -> str:
    return re.search(rf"<tr[^>]*>(?:(?!</tr>).)*?#{pk}</a>.*?</tr>", html, re.S)[0]


def test_the_booking_forms_answer_says_awaiting_approval_not_placed(two_hosts, alice):
    set_policy("lab-pool", {"approval_above_gpu_hours": 100})
    form = {"tenant": "acme", "pool": "lab-pool", "count": "4", "device_class": "gpu", "duration": "2d"}
    html = alice.post("/book/", form, **HX).text
    answer = re.search(r'id="booking-result".*?</h2>', html, re.S)[0]
    assert AWAITING_BADGE in answer and "✓ placed" not in answer
    assert Reservation.objects.get().condition("AwaitingApproval")


def test_the_list_page_its_csv_and_the_api_row_say_it_awaits(held, book, alice, op):
    other = book(gpus=1, duration="1h")  # placed, 1 GPU-hour: no approval asked
    html = alice.get("/reservations/").text
    assert AWAITING_BADGE in _row(html, held.pk) and "✓ placed" not in _row(html, held.pk)
    assert "✓ placed" in _row(html, other.pk) and AWAITING_BADGE not in _row(html, other.pk)
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO(alice.get("/reservations/?format=csv").text))}
    assert (rows[str(held.pk)]["status"], rows[str(held.pk)]["awaitingApproval"]) == ("placed", "true")
    assert rows[str(other.pk)]["awaitingApproval"] == "false"
    listed = {r["id"]: r for r in alice.get("/api/v1/reservations").json()["results"]}
    assert listed[held.pk]["awaitingApproval"]["gpuHours"] == 192.0
    assert listed[other.pk]["awaitingApproval"] is None
    # Approved, the list (kept in the page cache) reads placed at once.
    assert op.post(f"/approvals/{held.pk}/approve/").status_code == 302
    html = alice.get("/reservations/").text
    assert "✓ placed" in _row(html, held.pk) and AWAITING_BADGE not in html


def test_the_node_timeline_marks_the_awaiting_booking_until_it_is_approved(held, op, alice):
    node = Reservation.objects.get(pk=held.pk).allocations.get().node.name
    for client in (op, alice):
        html = client.get(f"/nodes/{node}/").text
        assert f"⌛ #{held.pk} acme" in html and "tl-awaiting" in html
        assert f"reservation {held.pk} (acme) (awaiting approval)" in html
        assert "awaiting approval: held, nothing starts" in html  # the legend
    assert op.post(f"/approvals/{held.pk}/approve/").status_code == 302
    html = op.get(f"/nodes/{node}/").text  # the kept timeline follows the approval
    assert f"⌛ #{held.pk}" not in html and f"#{held.pk} acme" in html


def test_the_calendar_has_it_tentative_until_approved(held, acme_user, op):
    (event,) = icalendar.Calendar.from_ical(calendar(feed_of(acme_user), "http://x")).walk("VEVENT")
    assert str(event["status"]) == "TENTATIVE" and str(event["summary"]).startswith(
        "[awaiting approval] acme"
    )
    op.post(f"/approvals/{held.pk}/approve/")
    (event,) = icalendar.Calendar.from_ical(calendar(feed_of(acme_user), "http://x")).walk("VEVENT")
    assert str(event["status"]) == "CONFIRMED" and str(event["summary"]).startswith("[placed] acme")


def test_its_page_history_reads_each_status_as_it_was(held, alice):
    html = alice.get(f"/reservations/{held.pk}/").text
    head = re.search(r'id="booking-result".*?</h2>', html, re.S)[0]
    assert AWAITING_BADGE in head
    history = re.search(r"<h3[^>]*>History.*?</table>|History</.*?</table>", html, re.S)[0]
    assert AWAITING_BADGE not in history and "✓ placed" in history and "◷ pending" in history


def test_the_timeline_legend_names_awaiting_only_when_a_bar_is(two_hosts, book, op):
    book(gpus=1, duration="1h")
    assert "awaiting approval: held, nothing starts" not in op.get("/nodes/node-a/").text
