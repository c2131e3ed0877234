"""One GPU-hour measure (capacity.gpu_hours): per shape, in Python and SQL alike, and every count agreeing on a lease.

A whole GPU holds 1 GPU-hour an hour, a MIG slice its share, a whole-node lease each GPU once (a
partitioned GPU as itself, its slices booked with it counting nothing), a gang its members'.
Approvals, maxFutureGpuHours, shares, the booked-hours rollup and the audit count a lease alike.
"""

from datetime import timedelta
from fractions import Fraction

import pytest
from django.db import connection
from django.db.models import F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capacity.audit import audit
from capacity.gpu_hours import BookedDevice, allocation_sevenths, gpu_hours, held_sevenths_sql
from capacity.models import Allocation, DeviceBooking, Reservation
from inventory.models import Device, Pool
from policy.limits import future_gpu_hours
from policy.pool_policy import set_policy
from policy.shares import holding_gpus, set_share
from usage.booked_hours import booked_hours_drift

from booking import NOW, ask, lease, partitioned_node, reserve
from hours import kept, recount

pytestmark = pytest.mark.django_db

HOUR_MS = 3_600_000
PROFILES = {
    "mig-1g.10gb": 1,
    "mig-2g.20gb": 2,
    "mig-3g.40gb": 3,
    "mig-4g.40gb": 4,
    "mig-7g.80gb": 7,
    "mig-1c.3g.40gb": 3,
}


def test_a_whole_gpu_holds_one_gpu_hour_an_hour():
    gpus = [BookedDevice(i, "gpu") for i in range(4)]
    assert gpu_hours(gpus, 0, 3 * HOUR_MS) == 12


@pytest.mark.parametrize(("device_class", "sevenths"), PROFILES.items())
def test_a_mig_slice_holds_its_share_of_a_gpu(device_class, sevenths):
    assert gpu_hours([BookedDevice(1, device_class, parent_id=99)], 0, 7 * HOUR_MS) == sevenths


def test_a_lease_of_a_node_with_two_partitioned_gpus_holds_each_gpu_once():
    devices = [BookedDevice(i, "gpu") for i in range(8)]
    devices += [BookedDevice(10 + i, k, parent_id=0) for i, k in enumerate(("mig-3g.40gb", "mig-3g.40gb"))]
    devices += [
        BookedDevice(20 + i, k, parent_id=1)
        for i, k in enumerate(("mig-4g.40gb", "mig-2g.20gb", "mig-1g.10gb"))
    ]
    assert gpu_hours(devices, 0, HOUR_MS) == 8  # not 8 + 13/7 (9.9)
    # The same slices booked without their GPU (a device request) hold their shares.
    assert gpu_hours(devices[8:], 0, HOUR_MS) == Fraction(13, 7)


def test_a_gang_holds_what_its_members_hold():
    members = [[BookedDevice(10 * m + i, "gpu") for i in range(2)] for m in range(3)]
    assert sum(gpu_hours(m, 0, 2 * HOUR_MS) for m in members) == 12


ALLOCATIONS = st.lists(
    st.tuples(st.sampled_from(["gpu", "nic", *PROFILES]), st.booleans(), st.integers(0, 3)), max_size=12
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=ALLOCATIONS)
def test_the_sql_rule_agrees_with_the_python_rule_on_any_allocation(drawn):
    """Devices 0-3 are GPUs that may be booked; each drawn device is a slice of one of them, or not a slice."""
    parents = [BookedDevice(i, "gpu") for i in range(4) if any(p == i and s for _, s, p in drawn)]
    devices = parents + [
        BookedDevice(100 + n, cls, parent_id=p if sliced else None)
        for n, (cls, sliced, p) in enumerate(drawn)
    ]
    expected = allocation_sevenths(devices)
    booked = [d.id for d in devices]
    with connection.cursor() as cur:
        cur.execute(
            f"""SELECT v.id, {held_sevenths_sql("v.device_class", "v.parent_id = ANY(%(booked)s::bigint[])")}
                  FROM unnest(%(ids)s::bigint[], %(classes)s::text[], %(parents)s::bigint[]) AS v(id, device_class, parent_id)""",
            {
                "booked": booked,
                "ids": booked,
                "classes": [d.device_class for d in devices],
                "parents": [d.parent_id for d in devices],
            },
        )
        assert dict(cur.fetchall()) == expected


def test_an_insert_that_leaves_them_out_gets_the_same_sevenths_and_model_from_the_trigger(tenant, make_node):
    """Row by row, GPUs before their slices (the trigger sees the rows inserted before each)."""
    node = partitioned_node(make_node)
    Device.objects.filter(node=node).update(attributes={"productName": "NVIDIA A100"})
    reservation = Reservation.objects.create(
        tenant=tenant,
        pool=Pool.objects.get(slug="lab-pool"),
        request={},
        binding="node",
        starts_at=NOW,
        ends_at=NOW + timedelta(hours=1),
    )
    allocation = Allocation.objects.create(
        reservation=reservation, node=node, starts_at=NOW, ends_at=NOW + timedelta(hours=1)
    )
    devices = list(Device.objects.filter(node=node).order_by(F("parent_id").asc(nulls_first=True), "index"))
    for d in devices:
        DeviceBooking.objects.create(device=d, allocation=allocation, during=(NOW, NOW + timedelta(hours=1)))
    rule = allocation_sevenths(BookedDevice(d.pk, d.device_class, d.parent_id) for d in devices)
    stored = {b.device_id: (b.gpu_sevenths, b.gpu_model) for b in DeviceBooking.objects.all()}
    assert stored == {pk: (sevenths, "NVIDIA A100") for pk, sevenths in rule.items()}
    assert sum(rule.values()) == 8 * 7


def test_a_lease_on_partitioned_gpus_counts_8_gpu_hours_for_limits_approvals_shares_and_usage(
    tenant, make_node
):
    """1 h of an 8-GPU node, GPUs 0 and 1 partitioned: 8 GPU-hours everywhere (parents and slices once counted 9.9)."""
    node = partitioned_node(make_node)
    make_node(
        "node-b", gpus=2
    )  # the pool's bookable GPUs count node-a's slices (6 + 13/7), so 9.86 with these
    set_policy("lab-pool", {"max_future_gpu_hours": 8, "approval_above_gpu_hours": 8})
    set_share("lab-pool", tenant.slug, 6, 2, None)
    placed = reserve(lease()).reservation
    assert placed.status == "placed", placed.conditions  # not refused for "would hold 9.9"
    placed.refresh_from_db()
    assert not any(c["type"] == "AwaitingApproval" for c in placed.conditions)
    assert placed.borrowed_gpus == pytest.approx(2)  # shares' measure: 8 held, 6 guaranteed
    assert future_gpu_hours(tenant.pk, node.pool_id, NOW) == pytest.approx(8)
    assert holding_gpus(Pool.objects.get(slug="lab-pool"), NOW + timedelta(minutes=30)) == {
        tenant.pk: pytest.approx(8)
    }
    assert sum(b for b, _ in kept().values()) == 8
    assert kept() == recount()
    assert booked_hours_drift() == [] and audit() == []


def test_a_lease_above_the_approval_limit_waits_and_says_its_gpu_hours(tenant, make_node):
    partitioned_node(make_node)
    set_policy("lab-pool", {"approval_above_gpu_hours": 7})
    placed = reserve(lease()).reservation
    placed.refresh_from_db()
    held = next(c for c in placed.conditions if c["type"] == "AwaitingApproval")
    assert held["message"].startswith("8 GPU-hours, above approvalAboveGpuHours 7")


def test_a_gang_counts_its_members_gpu_hours_for_max_future_gpu_hours(tenant, make_node):
    for name in ("node-a", "node-b"):
        make_node(name, gpus=2)
    placed = reserve({**ask(2, hours=3), "gang": {"size": 2}}).reservation
    assert placed.status == "placed"
    assert future_gpu_hours(tenant.pk, Pool.objects.get(slug="lab-pool").pk, NOW) == pytest.approx(12)
