"""When nothing fits now: the preview page says when it would, books that window, and names never-fits."""

import re
from html import unescape

import pytest

from capacity.models import Reservation

from web_helpers import error_next_to

BASE = {"tenant": "acme", "pool": "lab-pool", "count": "1", "device_class": "gpu", "duration": "1d"}


@pytest.fixture
def lab(make_node, tenant):
    """node-a and node-b, four GPUs each."""
    for name in ("node-a", "node-b"):
        make_node(name, gpus=4)


def test_the_preview_shows_the_earliest_start_and_a_button_that_books_that_window(op, lab, book):
    book("acme", gpus=4, duration="6h")
    book("acme", gpus=4, duration="9h")
    html = op.post("/preview/", {**BASE, "count": "4", "duration": "2h"}).text
    shown = re.search(r'<div class="earliest" id="earliest">(.*?)</div>', html, re.S).group(1)
    assert "earliest start: " in shown and " UTC</strong> on node-" in shown
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', shown))
    assert fields["count"] == "4" and "duration" not in fields
    first_end = Reservation.objects.order_by("ends_at").first().ends_at
    assert fields["start"] == first_end.isoformat()
    # The button books exactly that window: it places.
    response = op.post("/book/", {k: unescape(v) for k, v in fields.items()})
    made = Reservation.objects.order_by("-pk").first()
    assert response.status_code == 302
    assert made.status == "placed"
    assert made.starts_at == first_end


def test_the_preview_lists_hints(op, lab, book):
    book("acme", gpus=4, duration="6h")
    book("acme", gpus=2, duration="3h")
    html = op.post("/preview/", {**BASE, "count": "4", "duration": "2h"}).text
    listed = re.search(r'<ul id="hints">(.*?)</ul>', html, re.S).group(1)
    # "fits from …" is the earliest start, shown above with its button: not repeated here.
    assert re.findall(r"<li>(.*?)</li>", listed) == ["fits with 2 gpu on 1 node"]
    assert 'id="earliest"' in html


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"count": "9"}, "count", "the largest node in lab-pool has 4 gpu"),
        ({"device_class": "tpu"}, "device_class", "no node in lab-pool has class tpu: classes are gpu"),
        (
            {"selector": "gpuproduct=H100"},
            "selector",
            "no device or node in lab-pool has gpuproduct; did you mean gpuProduct?",
        ),
    ],
)
def test_the_booking_form_refuses_what_could_never_fit_next_to_the_field(op, lab, fields, field, message):
    from inventory.models import Device

    Device.objects.update(attributes={"gpuProduct": "H100"})
    html = op.post("/book/", {**BASE, **fields}).text
    assert unescape(error_next_to(html, field)) == message
    assert not Reservation.objects.exists()


def test_the_preview_says_when_a_request_never_fits(op, lab):
    html = op.post("/preview/", {**BASE, "count": "9"}).text
    assert "Never fits:</strong> the largest node in lab-pool has 4 gpu." in html
    assert 'id="earliest"' not in html
    # Larger than any node: the largest request that fits is offered.
    listed = re.search(r'<ul id="hints">(.*?)</ul>', html, re.S).group(1)
    assert re.findall(r"<li>(.*?)</li>", listed) == ["fits with 4 gpu on 2 nodes"]


def test_a_never_fits_message_ending_in_a_question_keeps_its_one_mark(op, lab):
    from inventory.models import Device

    Device.objects.update(attributes={"gpuProduct": "H100"})
    html = unescape(op.post("/preview/", {**BASE, "selector": "gpuproduct=H100"}).text)
    assert "did you mean gpuProduct? No node of this pool" in html
    assert "gpuProduct?." not in html


def test_the_preview_says_when_nothing_fits_within_the_fourteen_days_it_searched(op, lab, book):
    book("acme", gpus=4, duration="20d")
    book("acme", gpus=4, duration="20d")
    html = op.post("/preview/", {**BASE, "count": "4", "duration": "1h"}).text
    said = re.search(r'<p class="muted" id="earliest">(.*?)</p>', html, re.S).group(1)
    assert said.startswith("Earliest start: no start fits before ")
    assert said.endswith(" (horizon 14d)")
    assert "Book that window" not in html


def test_a_pending_reservation_offers_to_book_the_window_its_hint_names(alice, lab, book):
    """Both nodes are full for 6 and 9 hours; a 2-hour booking of 4 GPUs now waits. Its page books the
    same request at the earliest window that fits (when the 6-hour booking ends), once."""
    book("acme", gpus=4, duration="6h")
    book("acme", gpus=4, duration="9h")
    waiting = book("acme", gpus=4, duration="2h")
    assert waiting.status == "pending" and waiting.conditions[0]["hint"].startswith("fits from ")
    page = alice.get(f"/reservations/{waiting.pk}/").text
    assert 'id="rebook"' in page and "Book that window" in page

    response = alice.post(f"/reservations/{waiting.pk}/rebook/")
    made = Reservation.objects.order_by("-pk").first()
    assert response.status_code == 302 and response["Location"] == f"/reservations/{made.pk}/"
    first_end = Reservation.objects.filter(status="placed").order_by("ends_at").first().ends_at
    assert (made.status, made.starts_at, made.ends_at - made.starts_at) == (
        "placed",
        first_end,
        waiting.ends_at - waiting.starts_at,
    )
    assert alice.post(f"/reservations/{waiting.pk}/rebook/")["Location"] == f"/reservations/{made.pk}/"
    assert Reservation.objects.count() == 4  # pressing twice books once
    waiting.refresh_from_db()
    assert waiting.status == "pending"  # left as it is: the tenant releases it or lets it wait
    # A placed reservation offers no such button, and refuses the post.
    assert 'id="rebook"' not in alice.get(f"/reservations/{made.pk}/").text
    refused = alice.post(f"/reservations/{made.pk}/rebook/")
    assert refused.status_code == 409 and "only a pending reservation is booked again" in refused.text
