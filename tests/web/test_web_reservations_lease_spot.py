"""The reservations list and page: preempted spot work, whole-node leases and the spot marker."""

import re

from capacity import services
from capacity.models import Reservation

from web_helpers import HX

PREEMPTED_MESSAGE = "preempted at 2026-12-04T10:00Z by reservation 42"
# As the pages show it: its time in UTC words, as the rest of the page (the API keeps the ISO text).
PREEMPTED_SHOWN = "preempted at 2026-12-04 10:00:00 UTC by reservation 42"


def preempted(reservation: Reservation) -> Reservation:
    """Release a spot reservation, then mark it preempted as the preemption engine will."""
    services.release(reservation.pk)
    reservation.refresh_from_db()
    reservation.status = Reservation.Status.PREEMPTED
    reservation.conditions = [
        {
            "type": "Preempted",
            "status": "True",
            "reason": "PreemptedByRegular",
            "message": PREEMPTED_MESSAGE,
            "reservationId": 42,
        }
    ]
    reservation.save(update_fields=["status", "conditions"])
    return reservation


def row_of(html: str, reservation: Reservation) -> str:
    row = re.search(rf'<tr id="reservation-{reservation.pk}".*?</tr>', html, re.S)
    assert row, f"no row for reservation {reservation.pk}"
    return row.group(0)


def lease(tenant="acme", **extra):
    data = {"tenantId": tenant, "poolId": "lab-pool", "binding": "node", "duration": "1d", **extra}
    return services.reserve(data).reservation


def test_a_preempted_reservation_has_its_own_badge_and_says_why_in_the_list(alice, two_hosts, book):
    spot = preempted(book("acme", gpus=1, priority="spot"))
    row = row_of(alice.get("/reservations/").text, spot)
    assert f'<tr id="reservation-{spot.pk}" class="status-preempted">' in row
    assert '<span class="badge status preempted">↯ preempted</span>' in row
    assert f'<span class="muted">Preempted:</span> {PREEMPTED_SHOWN}' in row
    assert "Release…" not in row  # it has ended: nothing to release


def test_the_reservation_page_shows_the_preempted_condition_and_when(alice, two_hosts, book):
    spot = preempted(book("acme", gpus=1, priority="spot"))
    html = alice.get(f"/reservations/{spot.pk}/").text
    assert '<section class="card result status-preempted"' in html
    assert "↯ preempted" in html
    assert f'<span class="muted">Preempted:</span> <code>{PREEMPTED_SHOWN}</code>' in html
    assert re.search(r"<dt>Preempted</dt><dd>\w{3} \d\d \d\d:\d\d UTC</dd>", html)
    assert "Release…" not in html


def test_the_status_filter_offers_preempted_and_lists_only_those(alice, two_hosts, book):
    spot = preempted(book("acme", gpus=1, priority="spot"))
    placed = book("acme", gpus=1)
    html = alice.get("/reservations/").text
    assert '<option value="preempted">Preempted</option>' in html
    listing = alice.get("/reservations/?status=preempted", **HX).text
    assert f'id="reservation-{spot.pk}"' in listing and f'id="reservation-{placed.pk}"' not in listing


def test_spot_reservations_carry_a_spot_marker_in_the_list_and_on_their_page(alice, two_hosts, book):
    spot = book("acme", gpus=1, priority="spot")
    regular = book("acme", gpus=1)
    listing = alice.get("/reservations/").text
    assert '<span class="badge spot"' in row_of(listing, spot)
    assert "spot" not in row_of(listing, regular)
    html = alice.get(f"/reservations/{spot.pk}/").text
    assert '<span class="badge spot"' in html and "<dt>Priority</dt><dd>spot</dd>" in html


def test_a_lease_reads_whole_node_in_the_list_and_on_its_page(alice, two_hosts, book):
    leased = lease()
    device = book("acme", gpus=1)
    listing = alice.get("/reservations/").text
    row = row_of(listing, leased)
    node = leased.allocations.get().node.name
    assert "▣ whole node" in row
    assert f'<a href="/nodes/{node}/">{node}</a> <span class="muted small"' in row and "the whole node" in row
    assert '<span class="chip"' not in row  # the node's devices are not listed one by one
    assert "whole node" not in row_of(listing, device)
    html = alice.get(f"/reservations/{leased.pk}/").text
    assert "<dt>Books</dt><dd>whole node</dd>" in html
    assert "the whole node, 4 devices" in html


def test_a_gang_lease_lists_each_of_its_nodes(alice, two_hosts):
    leased = lease(gang={"size": 2})
    html = alice.get(f"/reservations/{leased.pk}/").text
    assert "<dt>Books</dt><dd>whole nodes</dd>" in html
    assert html.count("the whole node, 4 devices") == 2


def test_a_pending_lease_still_reads_whole_node(alice, two_hosts, book):
    book("acme", gpus=1)
    book("acme", gpus=1, pool="lab-pool")  # node-a again: the fullest that fits
    book("globex", gpus=4)  # node-b is full
    pending = lease()
    assert pending.status == "pending"
    row = row_of(alice.get("/reservations/").text, pending)
    assert "▣ whole node" in row and "◷ pending" in row


def test_spot_work_a_regular_booking_took_back_reads_preempted_to_its_tenant(alice, bob, two_hosts, book):
    spot = [book("globex", gpus=4, priority="spot") for _ in range(2)]  # both nodes full of spot work
    response = alice.post(
        "/book/",
        {"tenant": "acme", "pool": "lab-pool", "count": "4", "device_class": "gpu", "duration": "1d"},
    )
    regular = Reservation.objects.get(tenant__slug="acme")
    assert response.status_code == 302 and regular.status == "placed"
    victim = next(r for r in spot if Reservation.objects.get(pk=r.pk).status == "preempted")
    row = row_of(bob.get("/reservations/?status=preempted").text, victim)
    assert "↯ preempted" in row and "~ spot" in row
    # acme's reservation is not globex's to know of: bob reads that another tenant's work took it back.
    assert re.search(r"Preempted:</span> preempted at [^<]* by regular work of another tenant<", row)
    assert "Release…" not in row
    page = bob.get(f"/reservations/{victim.pk}/").text
    assert "<dt>Preempted</dt>" in page and "by regular work of another tenant" in page
    assert f"reservation {regular.pk}" not in page and f"#{regular.pk}" not in page
    assert "Was on <a" in page and "<p>On <a" not in page  # where it ran, not where it runs
