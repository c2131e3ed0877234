"""Today split at now from the booked points and now's hour's bookings: exact, by hand and against a recount.

NOW is 12:00 on 2 December. Two H100s from 12:20 to 14:00 and a 3g slice (3/7 of a GPU) from
12:30:00.5 to 14:00, released, moved to history, folded: every split is the hand-counted figure
in the rollup's unit (a GPU counts 7 a microsecond).
"""

from datetime import timedelta

from capacity import services
from capacity.archive import move_history
from inventory.models import Device, Pool
from usage.booked_hours import booked_hours_drift, fold_booked_hours
from usage.booked_today import booked_to_date
from usage.models import BookedPoints

from booking import MS, NOW, ask, reserve
from hours import kept_points, recount_points, recount_to_date

MINUTE_US = 60_000_000


def booked(at) -> dict[str, int]:
    """Return model -> booked before `at` on its day (GPU_HOUR units), checked against the recount."""
    split = booked_to_date(at)
    assert split == recount_to_date(at), at
    return {model: before for (_, _, model), (before, _) in split.items()}


def window(data: dict, start_ms: int, end_ms: int) -> dict:
    return {**data, "during": {"start": MS + start_ms, "end": MS + end_ms}}


def test_a_day_splits_exactly_inside_now_s_hour_through_a_release_a_history_move_and_the_fold(
    tenant, make_node
):
    make_node("node-a", gpus=2)
    Device.objects.filter(node__name="node-a").update(attributes={"productName": "NVIDIA H100"})
    node = make_node("node-b", gpus=1)
    Device.objects.create(
        node=node, uuid="MIG-b-0", device_class="mig-3g.40gb", parent=node.devices.get(index=0), index=10
    )
    whole = reserve(window(ask(2), 20 * 60_000, 120 * 60_000)).reservation
    slice_ = {**ask(1), "devices": [{"class": "mig-3g.40gb", "count": 1}]}
    reserve(window(slice_, 30 * 60_000 + 500, 120 * 60_000))
    assert kept_points() == recount_points()

    assert booked(NOW + timedelta(minutes=10)) == {}  # all of it ahead
    assert booked(NOW + timedelta(minutes=25)) == {"NVIDIA H100": 2 * 7 * 5 * MINUTE_US}
    assert booked(NOW + timedelta(minutes=45)) == {
        "NVIDIA H100": 2 * 7 * 25 * MINUTE_US,
        "mig-3g.40gb": 3 * (15 * MINUTE_US - 500_000),
    }
    # In the next hour the start points count from their hour's row, the ends (13:50) not yet.
    assert booked(NOW + timedelta(hours=1, minutes=50)) == {
        "NVIDIA H100": 2 * 7 * 90 * MINUTE_US,
        "mig-3g.40gb": 3 * (80 * MINUTE_US - 500_000),
    }

    services.release(whole.pk, now=NOW + timedelta(minutes=40))  # the cut ends it in now's hour
    at = NOW + timedelta(minutes=50)
    assert booked(at)["NVIDIA H100"] == 2 * 7 * 20 * MINUTE_US
    assert booked(NOW + timedelta(minutes=39, seconds=59, microseconds=999_999))["NVIDIA H100"] == (
        2 * 7 * (20 * MINUTE_US - 1)
    )
    moved = move_history(NOW + timedelta(minutes=45), after=timedelta(minutes=1))
    assert moved.bookings == 2  # the H100s, read back from history: their points lie in now's hour
    assert booked(at)["NVIDIA H100"] == 2 * 7 * 20 * MINUTE_US
    fold_booked_hours()
    assert kept_points() == recount_points() and booked_hours_drift() == []
    assert booked(at) == {
        "NVIDIA H100": 2 * 7 * 20 * MINUTE_US,
        "mig-3g.40gb": 3 * (20 * MINUTE_US - 500_000),
    }
    assert booked(NOW + timedelta(hours=3)) == {
        "NVIDIA H100": 2 * 7 * 20 * MINUTE_US,
        "mig-3g.40gb": 3 * (90 * MINUTE_US - 500_000),
    }


def test_the_audit_reports_booked_points_that_disagree_with_the_bookings(tenant, make_node):
    make_node("node-a", gpus=1)
    reserve(window(ask(1), 30 * 60_000, 90 * 60_000))
    fold_booked_hours()
    row = BookedPoints.objects.get(hour=12)
    assert (row.share, row.moment) == (-7, -7 * 750 * MINUTE_US)
    BookedPoints.objects.filter(pk=row.pk).update(share=-14)
    assert booked_hours_drift() == [
        f"booked points {tenant.pk}/{Pool.objects.get().pk}/gpu/{NOW.date()} hour 12: stored (share, moment,"
        f" lent share, lent moment) (-14, {-7 * 750 * MINUTE_US}, 0, 0), bookings sum to (-7, {-7 * 750 * MINUTE_US}, 0, 0)"
    ]
    BookedPoints.objects.filter(pk=row.pk).update(share=-7)
    assert booked_hours_drift() == []
