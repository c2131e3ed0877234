"""Booking and previewing whole nodes (binding node) and spot work from the browser."""

import re

import pytest

from capacity.models import Allocation, DeviceBooking, Reservation

from web_helpers import HX, error_next_to

BASE = {"tenant": "acme", "pool": "lab-pool", "duration": "1d"}
# What the browser sends for a whole node: its script disables (so never sends) the device fields.
LEASE = {**BASE, "binding": "node", "priority": "regular", "nodes": "1"}


def no_rows():
    return not (Reservation.objects.exists() or Allocation.objects.exists() or DeviceBooking.objects.exists())


def test_the_request_forms_offer_devices_or_a_whole_node_and_regular_or_spot(alice, three_hosts_with_scalars):
    for url in ("/book/", "/preview/"):
        html = alice.get(url).text
        assert re.search(r'<input type="radio" name="binding" value="none"[^>]* checked>', html), url
        assert re.search(r'<input type="radio" name="binding" value="node"', html)
        assert re.search(r'<input type="radio" name="priority" value="regular"[^>]* checked>', html)
        assert re.search(r'<input type="radio" name="priority" value="spot"', html)
        # Each choice's fields sit in their own fieldset, which the page's script disables when unchosen.
        assert '<fieldset class="span-4 sub-grid" data-binding="none"' in html
        assert '<fieldset class="span-4 sub-grid" data-binding="node"' in html


def test_booking_a_whole_node_leases_every_device_of_one_node(alice, three_hosts_with_scalars):
    response = alice.post("/book/", LEASE)
    reservation = Reservation.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/reservations/{reservation.pk}/"
    assert reservation.status == "placed" and reservation.binding == "node"
    assert "devices" not in reservation.request["input"] and "resources" not in reservation.request["input"]
    allocation = Allocation.objects.get()
    booked = set(DeviceBooking.objects.values_list("device__uuid", flat=True))
    assert booked == {f"GPU-{allocation.node.name}-{i}" for i in range(4)}


def test_a_whole_node_booking_ignores_the_device_fields_it_is_not_sent(alice, three_hosts_with_scalars):
    # Without the script a blank GPU count is what a user clears; the class alone asks for nothing.
    response = alice.post("/book/", {**LEASE, "count": "", "device_class": "gpu", "selector": ""})
    assert response.status_code == 302
    assert Reservation.objects.get().binding == "node"


def test_a_gang_lease_from_the_form_books_several_whole_nodes(alice, three_hosts_with_scalars):
    alice.post("/book/", {**LEASE, "nodes": "2"})
    reservation = Reservation.objects.get()
    assert reservation.status == "placed"
    assert reservation.request["input"]["gang"] == {"size": 2}
    assert Allocation.objects.filter(reservation=reservation).count() == 2
    assert DeviceBooking.objects.count() == 8


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "count",
            "1",
            "devices: a whole-node lease takes every device and all scalar room; leave devices out",
        ),
        ("vcpu", "8", "resources: a whole-node lease takes every device and all scalar room"),
        ("nvlink", "on", "topology: a whole-node lease takes every device and all scalar room"),
        ("nodes", "0", "the number of nodes must be an integer from 1 to"),
    ],
)
def test_a_lease_given_device_fields_shows_the_services_refusal_next_to_the_field(
    alice, three_hosts_with_scalars, field, value, message
):
    for url in ("/book/", "/preview/"):
        html = alice.post(url, {**LEASE, field: value}).text
        assert message in error_next_to(html, field), url
        html = alice.post(url, {**LEASE, field: value}, **HX).text
        assert message in error_next_to(html, field), url
    assert no_rows()


def test_a_request_for_nothing_is_refused_at_the_gpu_count(alice, three_hosts_with_scalars):
    html = alice.post("/book/", {**BASE, "binding": "none", "count": ""}).text
    assert "a request must claim at least one device or resource" in error_next_to(html, "count")
    assert no_rows()


def test_a_spot_booking_is_stored_as_spot_and_shown_as_spot(alice, three_hosts_with_scalars):
    html = alice.post("/book/", {**BASE, "count": "1", "priority": "spot"}, follow=True).text
    reservation = Reservation.objects.get()
    assert reservation.priority == "spot" and reservation.binding == "none"
    assert '<span class="badge spot"' in html


def test_a_regular_booking_sends_no_priority(alice, three_hosts_with_scalars):
    alice.post("/book/", {**BASE, "count": "1", "priority": "regular"})
    reservation = Reservation.objects.get()
    assert reservation.priority == "regular" and "priority" not in reservation.request["input"]


def test_the_preview_of_a_lease_lists_the_leasable_nodes_and_why_not_the_others(
    op, three_hosts_with_scalars, book
):
    book("acme", gpus=1)  # node-a: the fullest that fits
    html = op.post("/preview/", LEASE).text
    assert "Fits — 2 of 3 nodes could be leased whole" in html
    table = re.search(r'<table class="ranked">.*?</table>', html, re.S).group(0)
    assert re.findall(r'<a href="/nodes/([\w-]+)/">', table) == ["node-b", "node-c"]
    assert "<th>Takes</th>" in table and table.count("▣ whole node") == 2
    assert "4 usable devices" in table
    rejected = re.findall(
        r'<a href="/nodes/([\w-]+)/">\1</a></td><td><code>(\w+)</code></td><td>([^<]+)</td>', html
    )
    assert len(rejected) == 1
    node, filter_, reason = rejected[0]
    assert (node, filter_) == ("node-a", "fits")
    assert re.fullmatch(r"booked until \d{4}-\d\d-\d\dT\d\d:\d\dZ: 1 of 4 gpu", reason)
    assert Reservation.objects.count() == 1  # the preview booked nothing


def test_without_preemptible_work_the_preview_still_says_nothing_fits(alice, three_hosts_with_scalars):
    html = alice.post("/preview/", {**BASE, "count": "5"}).text
    assert "✕ Nothing fits" in html and 'id="preemptible"' not in html


def test_the_preview_names_the_spot_work_a_regular_request_would_take_back(
    alice, three_hosts_with_scalars, book
):
    spot = [book("globex", gpus=4, priority="spot") for _ in range(3)]  # every node full of spot work
    html = alice.post("/preview/", {**BASE, "count": "4"}).text
    heading = re.search(r'<h2 class="preempt" id="preemptible">(.*?)</h2>', html).group(1)
    assert re.fullmatch(
        r"↯ Fits by preempting 1 spot reservation \(from \d{4}-\d\d-\d\d \d\d:\d\d UTC\)", heading
    )
    # Another tenant's work: counted, on its node, never its id or its name.
    ends = re.search(
        r"booking this would end\s+1 spot reservation of another tenant\s+on (node-[abc])\.", html
    )
    assert ends, html
    assert "globex" not in html and not any(f"#{r.pk}" in html for r in spot)
    assert all(r.status == "placed" for r in Reservation.objects.all())  # the preview took nothing


def test_a_spot_preview_never_offers_to_preempt(alice, three_hosts_with_scalars, book):
    for _ in range(3):
        book("globex", gpus=4, priority="spot")
    html = alice.post("/preview/", {**BASE, "count": "4", "priority": "spot"}).text
    assert "✕ Nothing fits" in html and 'id="preemptible"' not in html
