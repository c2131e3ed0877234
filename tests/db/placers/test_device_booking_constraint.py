"""The EXCLUDE constraint is the last word on double-booking."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import IntegrityError, transaction
from psycopg.types.range import Range

from capacity.models import Allocation, DeviceBooking, Reservation
from inventory.models import Device

# These tests write bookings beneath the services to test the constraint itself, so the counters
# the services keep (rollups) are not maintained here.
pytestmark = pytest.mark.allow_drift

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def hours(a, b):
    return Range(T0 + timedelta(hours=a), T0 + timedelta(hours=b), "[)")


@pytest.fixture
def allocation(make_node, tenant, pool):
    node = make_node("node-a", gpus=2)
    reservation = Reservation.objects.create(
        tenant=tenant, pool=pool, request={}, starts_at=T0, ends_at=T0 + timedelta(days=1)
    )
    return Allocation.objects.create(
        reservation=reservation, node=node, starts_at=T0, ends_at=T0 + timedelta(days=1)
    )


def book(allocation, device, during):
    return DeviceBooking.objects.create(device=device, allocation=allocation, during=during)


def test_overlapping_booking_of_the_same_device_is_refused(allocation):
    gpu = Device.objects.get(uuid="GPU-node-a-0")
    book(allocation, gpu, hours(0, 10))
    with pytest.raises(IntegrityError) as err, transaction.atomic():
        book(allocation, gpu, hours(9, 12))
    assert err.value.__cause__.sqlstate == "23P01"
    assert DeviceBooking.objects.count() == 1


def test_back_to_back_windows_are_accepted(allocation):
    gpu = Device.objects.get(uuid="GPU-node-a-0")
    book(allocation, gpu, hours(9, 10))
    book(allocation, gpu, hours(10, 11))
    book(allocation, gpu, hours(8, 9))
    assert DeviceBooking.objects.filter(device=gpu).count() == 3


def test_the_same_window_on_another_device_is_accepted(allocation):
    first, second = Device.objects.order_by("index")
    book(allocation, first, hours(0, 10))
    book(allocation, second, hours(0, 10))
    assert DeviceBooking.objects.count() == 2


def test_on_conflict_do_nothing_skips_the_overlapping_row(allocation):
    gpu = Device.objects.get(uuid="GPU-node-a-0")
    book(allocation, gpu, hours(0, 10))
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO capacity_devicebooking (device_id, allocation_id, during) VALUES (%s, %s, %s)"
            " ON CONFLICT DO NOTHING RETURNING device_id",
            [gpu.pk, allocation.pk, hours(5, 6)],
        )
        assert cur.fetchall() == []


def test_an_empty_booking_window_is_refused(allocation):
    gpu = Device.objects.get(uuid="GPU-node-a-0")
    with pytest.raises(IntegrityError), transaction.atomic():
        book(allocation, gpu, hours(3, 3))
