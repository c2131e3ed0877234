"""run_placer releases ended reservations and places pending ones once room frees up."""

import io
from datetime import timedelta

from django.core.management import call_command
from django.utils import timezone

from capacity.models import Reservation

from booking import ask, reserve


def test_one_round_releases_the_ended_and_places_the_waiting(tenant, make_node):
    make_node("node-a", gpus=1)
    now = timezone.now()
    start = int((now - timedelta(hours=3)).timestamp() * 1000)
    ended = reserve({**ask(1), "during": {"start": start, "end": start + 2 * 3_600_000}}).reservation
    # `running` is booked until tomorrow; `waiting` overlaps it. Then `running`'s window is cut to end
    # a minute ago, as if it had been shortened: the worker must release it and place `waiting`.
    running = reserve({**ask(1), "during": {"start": start + 2 * 3_600_000, "end": start + 30 * 3_600_000}})
    waiting = reserve({**ask(1), "during": {"start": start + 4 * 3_600_000, "end": start + 8 * 3_600_000}})
    assert waiting.reservation.status == "pending"
    Reservation.objects.filter(pk=running.reservation.pk).update(ends_at=now - timedelta(minutes=1))
    out = io.StringIO()
    call_command("run_placer", "--once", stdout=out)
    assert Reservation.objects.get(pk=ended.pk).status == "released"
    assert Reservation.objects.get(pk=running.reservation.pk).status == "released"
    assert Reservation.objects.get(pk=waiting.reservation.pk).status == "placed"
    assert out.getvalue() == "released 2 ended, placed 1 pending\n"


def test_one_round_repairs_a_booking_that_was_waiting_for_room(tenant, make_node):
    """node-a and node-b: 1 GPU each, both booked tomorrow; node-a's GPU fails, node-b's booking goes."""
    from capacity import services
    from capacity.services.repair import repair_pools
    from inventory.models import Device

    make_node("node-a", gpus=1)
    make_node("node-b", gpus=1)
    now = timezone.now()
    start = int((now + timedelta(days=1)).timestamp() * 1000)
    window = {"start": start, "end": start + 3_600_000}
    first = reserve({**ask(1), "during": window}, now=now).reservation
    second = reserve({**ask(1), "during": window}, now=now).reservation
    broken = first.allocations.get().node.name
    device = Device.objects.get(node__name=broken)
    device.healthy = False
    device.save(update_fields=["healthy"])
    assert repair_pools([first.pool_id]).waiting == [first.pk]
    services.release(second.pk)
    out = io.StringIO()
    call_command("run_placer", "--once", stdout=out)
    assert "repaired 1 reservations on unusable atoms" in out.getvalue()
    first.refresh_from_db()
    assert [c["type"] for c in first.conditions] == ["Repaired"]
