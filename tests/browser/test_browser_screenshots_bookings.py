"""Screenshots of bookings: queued, leases and spot work preempted, a drain and a repair, filters,
the fair queue, and a borrowing booking reclaimed.

Screenshots at 1366×900 to BERTH_SCREENSHOTS (e.g. docs/screenshots), else a temp dir
(the `shots` fixture); the run also checks that every page renders in a real browser.
"""

import pytest
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def test_screenshot_of_a_booking_queued_for_the_pool_lease_placer(login, demo, shots, settings):
    from capacity.conf import placer_config
    from capacity.placers.batch import place_queued

    settings.CAPACITY = {**settings.CAPACITY, "PLACER": "pool-lease"}
    page = login("acme")
    page.goto(f"{demo}/book/")
    page.select_option("#id_pool", "pcie-batch")
    page.fill("#id_count", "2")
    page.get_by_role("button", name="Book").click()
    result = page.locator("#booking-result")
    expect(result).to_contain_text("pending")
    expect(result).to_contain_text("Queued: queued for the pool's placer")
    shots(page, "booking-queued")
    page.goto(f"{demo}/reservations/")
    expect(page.locator("table.reservations")).to_contain_text("Queued: queued for the pool's placer")
    shots(page, "reservations-queued")
    assert len(place_queued(placer_config()).placed) == 1
    page.reload()
    expect(page.locator("table.reservations")).not_to_contain_text("Queued:")


def _steer(pool: str, node: str) -> list[str]:
    """Return every other node of the pool: excluding them places a booking on `node`."""
    from inventory.models import Node

    return list(Node.objects.filter(pool__slug=pool).exclude(name=node).values_list("name", flat=True))


def _preempt(reservation, by):
    """Mark a released spot reservation preempted, as the preemption engine will (by: its reservation)."""
    from capacity import services
    from capacity.models import Reservation

    services.release(reservation.pk)
    reservation.refresh_from_db()
    moment = reservation.released_at
    reservation.status = Reservation.Status.PREEMPTED
    reservation.conditions = [
        {
            "type": "Preempted",
            "status": "True",
            "reason": "PreemptedByRegular",
            "message": f"preempted at {moment:%Y-%m-%dT%H:%MZ} by reservation {by.pk}",
            "reservationId": by.pk,
        }
    ]
    reservation.save(update_fields=["status", "conditions"])


def test_screenshots_of_leases_spot_work_and_preemption(login, demo, shots, browser, browser_context_args):
    from capacity import services

    def reserve(tenant, node, **extra):
        data = {"tenantId": tenant, "poolId": "pcie-batch", "duration": "2d", **extra}
        result = services.reserve({**data, "excludeNodes": _steer("pcie-batch", node)})
        assert result.reservation.status == "placed", result.reservation.conditions
        return result.reservation

    leased = reserve("acme", "sfo2-pcie-03", binding="node")
    reserve("globex", "sfo2-pcie-06", binding="node", priority="spot")
    reserve("globex", "sfo2-pcie-02", devices=[{"class": "gpu", "count": 3}], priority="spot")
    reserve("acme", "sfo2-pcie-04", devices=[{"class": "gpu", "count": 2}], priority="spot")
    gone = reserve("acme", "sfo2-pcie-07", devices=[{"class": "gpu", "count": 4}], priority="spot")
    _preempt(gone, by=leased)

    page = login("operator")
    page.goto(f"{demo}/pools/pcie-batch/")
    expect(page.locator("#row-sfo2-pcie-03 .lease-block")).to_contain_text("leased by acme until")
    expect(page.locator("#row-sfo2-pcie-06 .lease-block.spot")).to_be_visible()
    expect(page.locator("#row-sfo2-pcie-02 .gpu.spot").first).to_be_visible()
    shots(page, "pool-detail-lease-spot")
    page.goto(f"{demo}/nodes/sfo2-pcie-03/")
    expect(page.locator(".tl-node")).to_contain_text("Whole node")
    shots(page, "node-detail-lease")

    # A tenant in a browser of its own: the operator's session stays where it is.
    context = browser.new_context(**browser_context_args)
    tenant = login("acme", context.new_page())
    tenant.goto(f"{demo}/book/")
    tenant.select_option("#id_pool", "h100-prod")
    tenant.check("#id_binding_1")
    expect(tenant.locator("fieldset[data-binding=none]")).to_be_hidden()
    expect(tenant.locator("#id_nodes")).to_be_visible()
    tenant.fill("#id_duration", "3d")
    tenant.get_by_role("button", name="Book").click()
    result = tenant.locator("#booking-result")
    expect(result).to_contain_text("placed")
    expect(result).to_contain_text("the whole node, 8 devices")
    shots(tenant, "book-lease")
    tenant.goto(f"{demo}/reservations/")
    expect(tenant.locator("table.reservations")).to_contain_text("preempted at")
    shots(tenant, "reservations-preempted")
    context.close()


def test_screenshots_of_a_draining_node_and_a_repaired_reservation(
    login, demo, shots, browser, browser_context_args
):
    """Two bookings run on sfo2-pcie-08 for two days, two more start there later; the operator
    drains it from its page, and acme reads why its booking moved."""
    import dataclasses
    from datetime import timedelta

    from django.utils import timezone

    from capacity import services
    from capacity.conf import placer_config
    from capacity.models import Allocation, Reservation

    node = "sfo2-pcie-08"
    # No random top-N pick: later bookings land on the fullest node that fits, the one that runs these.
    config = dataclasses.replace(placer_config(), random=None)

    def reserve(tenant, gpus, **window):
        data = {"tenantId": tenant, "poolId": "pcie-batch", "devices": [{"class": "gpu", "count": gpus}]}
        result = services.reserve({**data, **window}, config=config)
        assert result.reservation.status == "placed", result.reservation.conditions
        return result.reservation

    def later(start_in, length):
        start = timezone.now() + start_in
        return {"during": {"start": start.isoformat(), "end": (start + length).isoformat()}}

    # Steered there by excludeNodes, which they keep: they could not move, but they run on.
    for tenant in ("acme", "globex"):
        reserve(tenant, 2, duration="2d", excludeNodes=_steer("pcie-batch", node))
    moved = reserve("acme", 4, **later(timedelta(days=1), timedelta(hours=8)))
    also = reserve("globex", 2, **later(timedelta(days=1, hours=12), timedelta(days=1)))
    assert {a.node.name for r in (moved, also) for a in r.allocations.all()} == {node}

    page = login("operator")
    page.goto(f"{demo}/nodes/{node}/")
    expect(page.locator("#maintenance-impact")).to_contain_text(
        "2 running and 2 upcoming reservations are on this node"
    )
    page.fill("#id_drain-reason", "fan replacement")
    page.get_by_role("button", name="⇣ Drain").click()
    expect(page.locator("#drain-result")).to_contain_text("Running until they end")
    # Both later bookings left the node. (The result's moved list is empty for now: BookingRepair,
    # run when the cordon commits, moves them before drain() looks; see tests/web/test_web_drain.py.)
    gone = Allocation.objects.filter(reservation__in=[moved, also], released_at__isnull=True)
    assert gone.exists() and not gone.filter(node__name=node).exists()
    expect(page.locator("#drain-state")).to_contain_text("Draining until")
    expect(page.locator("#drain-state")).to_contain_text("fan replacement")
    shots(page, "node-draining")

    assert Reservation.objects.get(pk=moved.pk).condition("Repaired")
    context = browser.new_context(**browser_context_args)
    tenant = login("acme", context.new_page())
    tenant.goto(f"{demo}/reservations/{moved.pk}/")
    result = tenant.locator("#booking-result")
    expect(result).to_contain_text("Repaired: ")
    expect(result).to_contain_text(f"{node} is draining")
    shots(tenant, "reservation-repaired")
    context.close()


def test_screenshots_of_a_node_in_february_filtered_reservations_and_a_reservation(login, demo, shots):
    """acme books sfo2-pcie-08 in February; the operator moves the node's timeline there, lists the
    node's reservations with the filters, and opens one that waited before it was placed."""
    import dataclasses
    from datetime import UTC, datetime

    from capacity import services
    from capacity.conf import placer_config

    node = "sfo2-pcie-08"
    config = dataclasses.replace(placer_config(), random=None)
    steer = _steer("pcie-batch", node)

    def reserve(gpus, start, end, tenant="acme"):
        window = {
            "start": datetime.fromisoformat(start).replace(tzinfo=UTC).isoformat(),
            "end": datetime.fromisoformat(end).replace(tzinfo=UTC).isoformat(),
        }
        data = {"tenantId": tenant, "poolId": "pcie-batch", "devices": [{"class": "gpu", "count": gpus}]}
        return services.reserve({**data, "during": window, "excludeNodes": steer}, config=config).reservation

    made = [
        reserve(4, "2027-02-01T08:00", "2027-02-03T20:00"),
        reserve(2, "2027-02-02T00:00", "2027-02-06T00:00", tenant="globex"),
        reserve(2, "2027-02-04T12:00", "2027-02-05T12:00"),
    ]
    assert all(r.status == "placed" for r in made)

    page = login("operator")
    page.goto(f"{demo}/nodes/{node}/")
    expect(page.locator("#upcoming")).to_contain_text("3 upcoming reservations")
    page.get_by_role("link", name="Feb 01 08:00 UTC").click()
    expect(page.locator("#node-timeline h2")).to_contain_text("Feb 01 – Feb 10")
    page.wait_for_url(f"{demo}/nodes/{node}/?from=2027-02-01")
    page.locator("#node-timeline").scroll_into_view_if_needed()
    shots(page, "node-detail-february")

    page.goto(f"{demo}/reservations/?node={node}&from=2027-02-01&to=2027-03-01")
    expect(page.locator("#reservation-list .count")).to_contain_text("Reservations 1–3 of 3")
    shots(page, "reservations-filtered")
    page.fill("#id_to", "2027-01-01")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#id_to-error")).to_have_text("must be after from")
    shots(page, "reservations-filter-error")

    # Six GPUs on the node from Feb 01 08:00 wait behind the first booking, and are placed once it goes.
    waited = reserve(6, "2027-02-01T08:00", "2027-02-02T08:00")
    assert waited.status == "pending"
    services.release(made[0].pk)
    services.retry_pending([waited.pool_id])
    page.goto(f"{demo}/reservations/{waited.pk}/")
    expect(page.locator("#booking-result")).to_contain_text("placed")
    expect(page.locator("#condition-history")).to_contain_text("Unschedulable")
    page.locator("#reservation-details").scroll_into_view_if_needed()
    shots(page, "reservation-detail")


def test_screenshot_of_a_pending_reservation_in_the_fair_queue(login, demo, shots):
    """h100-prod has shares (acme 96, globex 48). Its GPUs are all booked a month out; then globex
    and acme each ask for more there and wait: acme's page says where it stands in the fair queue."""
    import dataclasses
    from datetime import timedelta

    from django.utils import timezone

    from capacity import services
    from capacity.conf import placer_config

    config = dataclasses.replace(placer_config(), random=None)
    start = (timezone.now() + timedelta(days=30)).replace(minute=0, second=0, microsecond=0)
    window = {"start": start.isoformat(), "end": (start + timedelta(days=2)).isoformat()}

    def reserve(tenant, gpus):
        data = {"tenantId": tenant, "poolId": "h100-prod", "devices": [{"class": "gpu", "count": gpus}]}
        return services.reserve({**data, "during": window}, config=config).reservation

    # acme up to its guarantee of 96 GPUs, globex the rest (borrowing): past their guarantees,
    # what each asks next waits, as nothing either holds is another's to reclaim.
    for tenant in ["acme"] * 12 + ["globex"] * 14:  # quota: 128 GPUs at once each
        if reserve(tenant, 8).status == "pending":
            break
    theirs, mine, more = reserve("globex", 4), reserve("acme", 8), reserve("acme", 2)
    assert {r.status for r in (theirs, mine, more)} == {"pending"}
    place = services.queue_places([mine])[mine.pk]
    page = login("acme")
    page.goto(f"{demo}/reservations/{mine.pk}/")
    expect(page.locator("#queue-place")).to_contain_text(f"{place.position}")
    expect(page.locator("#queue-place")).to_contain_text("in h100-prod; your team used")
    shots(page, "reservation-queue")


def test_screenshots_of_a_borrowing_booking_and_a_preview_that_reclaims_it(
    login, demo, shots, browser, browser_context_args
):
    """h100-prod has shares (acme 96 lending 32, globex 48). A month out, acme books 88 GPUs and
    globex the rest, borrowing past its 48; acme's preview of 8 more, within its guarantee, fits by
    reclaiming one of globex's borrowing bookings. globex's page shows the borrowing badge."""
    import dataclasses
    from datetime import timedelta

    from django.utils import timezone

    from capacity import services
    from capacity.conf import placer_config

    config = dataclasses.replace(placer_config(), random=None)
    start = (timezone.now() + timedelta(days=31)).replace(minute=0, second=0, microsecond=0)
    window = {"start": start.isoformat(), "end": (start + timedelta(days=2)).isoformat()}

    def reserve(tenant, gpus):
        data = {"tenantId": tenant, "poolId": "h100-prod", "devices": [{"class": "gpu", "count": gpus}]}
        return services.reserve({**data, "during": window}, config=config).reservation

    for _ in range(11):
        assert reserve("acme", 8).status == "placed"
    borrowing = []
    for _ in range(16):  # quota: 128 GPUs at once
        r = reserve("globex", 8)
        if r.status != "placed":
            break
        r.refresh_from_db()
        if r.borrowed_gpus:
            borrowing.append(r)
    assert borrowing

    page = login("globex")
    page.goto(f"{demo}/reservations/{borrowing[-1].pk}/")
    expect(page.locator(".badge", has_text="borrowed")).to_be_visible()
    shots(page, "reservation-borrowed")

    # acme in a browser of its own.
    context = browser.new_context(**browser_context_args)
    page = login("acme", context.new_page())
    page.goto(f"{demo}/preview/")
    page.select_option("#id_pool", "h100-prod")
    page.fill("#id_count", "8")
    page.fill("#id_start", start.strftime("%Y-%m-%d %H:%M"))
    page.fill("#id_duration", "2d")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#preemptible")).to_contain_text("Fits by reclaiming 1 borrowed reservation")
    shots(page, "preview-reclaim")
    context.close()
