"""Reserving through the services: placement, pending reasons, idempotency, quota and release."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from capacity import services
from capacity.models import Allocation, DeviceBooking, Quota, QuotaCharge, Reservation, ScalarClaim
from capacity.placement import CapacityError
from capacity.services import insert
from inventory import services as nodes
from inventory.models import NodeLabel, NodeResource, Pool

from booking import MS, NOW, ask, booked_at, capacity, claimed, config, from_real_now, held, reserve  # noqa: F401


def atoms_of(reservation):
    return [a for alloc in services.allocations_of(reservation) for a in alloc["atoms"]]


def test_a_request_lands_on_the_fullest_node_that_fits(tenant, make_node):
    """
    node-a: [x][ ][ ][ ]   one GPU booked
    node-b: [ ][ ][ ][ ]
    binpack prefers node-a for one more GPU.
    """
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    first = reserve(ask(1)).reservation
    assert services.allocations_of(first)[0]["nodeId"] == "node-a"
    second = reserve(ask(1)).reservation
    assert second.status == "placed"
    assert services.allocations_of(second)[0]["nodeId"] == "node-a"
    assert set(atoms_of(first)).isdisjoint(atoms_of(second))


def test_the_pending_reason_summarises_the_rejections(tenant, make_node):
    """Two nodes with 1 of 4 GPUs free and one cordoned node."""
    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=4)
    reserve(ask(3))
    reserve(ask(3))
    nodes.cordon("node-c")
    result = reserve(ask(4))
    assert result.reservation.status == "pending"
    assert result.outcome.reason == "no node fits (3 nodes): 2 × fits: 1 of 4 gpu free; 1 × cordoned"
    condition = Reservation.objects.get(pk=result.reservation.pk).condition("Unschedulable")
    assert condition == {
        "type": "Unschedulable",
        "status": "True",
        "reason": "NoFit",
        "message": "no node fits (3 nodes): 2 × fits: 1 of 4 gpu free; 1 × cordoned",
        # The first two bookings end a day after NOW: node-a takes 4 GPUs from then.
        "hint": "fits from 2026-12-03T12:00Z on node-a",
    }


def test_an_empty_pool_answers_that_it_has_no_nodes(tenant, pool):
    result = reserve(ask(1))
    assert result.reservation.status == "pending"
    assert result.outcome.reason == "the pool has no nodes"


def test_an_archived_pool_answers_pending(tenant, make_node, pool):
    make_node("node-a")
    Pool.objects.filter(pk=pool.pk).update(archived=True)
    result = reserve(ask(1))
    assert result.reservation.status == "pending"
    assert result.outcome.reason == "the pool is archived"
    assert not DeviceBooking.objects.exists()


def test_the_same_idempotency_key_returns_the_first_reservation(tenant, make_node):
    make_node("node-a")
    first = reserve(ask(1, idempotencyKey="job-1"))
    again = reserve(ask(1, idempotencyKey="job-1"))
    assert first.created and not again.created
    assert again.reservation.pk == first.reservation.pk
    assert Reservation.objects.count() == 1
    assert DeviceBooking.objects.count() == 1


def test_an_idempotency_key_reused_for_another_request_is_a_conflict(tenant, make_node):
    make_node("node-a")
    reserve(ask(1, idempotencyKey="job-1"))
    with pytest.raises(CapacityError) as err:
        reserve(ask(2, idempotencyKey="job-1"))
    assert err.value.code == "IDEMPOTENCY_CONFLICT"
    assert Reservation.objects.count() == 1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"devices": [{"class": "gpu", "count": 65}]}, "devices"),
        ({"devices": [{"class": "gpu", "count": 1, "topology": "ring"}]}, "topology"),
        ({"idempotencyKey": "has space"}, "idempotencyKey"),
        ({"nodeLabels": {"a": "b"}}, "nodeLabels is not a known field"),
        ({"during": {"start": MS, "end": MS}}, "during"),
    ],
)
def test_invalid_input_is_refused_before_anything_is_written(tenant, make_node, data, message):
    make_node("node-a")
    with pytest.raises(CapacityError) as err:
        reserve({**ask(1), **data})
    assert err.value.code == "INVALID_INPUT"
    assert message in err.value.message
    assert not Reservation.objects.exists()


def test_unknown_tenant_pool_and_foreign_scope_are_refused(tenant, other_tenant, make_node):
    make_node("node-a")
    with pytest.raises(CapacityError) as err:
        reserve(ask(1, tenant="initech"))
    assert err.value.code == "NOT_FOUND"
    with pytest.raises(CapacityError) as err:
        reserve(ask(1, pool="nowhere"))
    assert err.value.code == "NOT_FOUND"
    with pytest.raises(CapacityError) as err:
        reserve(ask(1), scope=services.Scope(frozenset({"globex"})))
    assert err.value.code == "FORBIDDEN"
    assert not Reservation.objects.exists()


def test_quota_is_charged_on_placement_and_refused_past_the_limit(tenant, make_node):
    make_node("node-a", gpus=4)
    Quota.objects.create(tenant=tenant, resource="gpu", limit=3)
    reserve(ask(2))
    assert held("gpu") == 2
    with pytest.raises(CapacityError) as err:
        reserve(ask(2))
    assert err.value.code == "QUOTA_EXCEEDED"
    assert err.value.message == "quota exceeded for acme: gpu 2 used + 2 requested > limit 3"
    assert Reservation.objects.count() == 1
    assert held("gpu") == 2


def test_a_pending_reservation_holds_no_quota(tenant, make_node):
    make_node("node-a", gpus=1)
    result = reserve(ask(2))
    assert result.reservation.status == "pending"
    assert not QuotaCharge.objects.exists()


def test_release_refunds_quota_ends_bookings_and_frees_scalars(tenant, make_node, pool):
    make_node("node-a", gpus=4, vcpu=32)
    NodeLabel.objects.create(
        node_id=pool.nodes.get().pk, key="bc.dev/cap.devices.limits", value="1", source="system"
    )
    running_ask = ask(2, start=-1, hours=4, resources={"vcpu": 8})
    running = reserve(running_ask, now=booked_at(running_ask)).reservation
    future = reserve(ask(4, start=10, hours=4)).reservation
    assert claimed("vcpu") == 8
    assert (capacity()["allocated"], capacity()["bookedLater"]) == (2, 2)
    services.release(running.pk, now=NOW)
    services.release(future.pk, now=NOW)
    assert held("gpu") == 0 and held("gpu", at=NOW + timedelta(hours=11)) == 0
    assert claimed("vcpu") == 0
    assert (capacity()["allocated"], capacity()["bookedLater"]) == (0, 0)
    # The running booking is cut at the release; the future one is gone.
    assert [b.during.upper for b in DeviceBooking.objects.all()] == [NOW, NOW]
    assert ScalarClaim.objects.get().during.upper == NOW
    assert Allocation.objects.filter(released_at=NOW).count() == 2
    assert services.release(running.pk, now=NOW).status == "released"


def test_release_retries_pending_reservations_after_commit(
    tenant, make_node, django_capture_on_commit_callbacks
):
    from django.utils import timezone

    make_node("node-a", gpus=2)
    # By the real clock: the retry after the commit reads it.
    soon = ask(2, start=from_real_now(1))
    holder = reserve(soon, now=timezone.now()).reservation
    waiting = reserve(soon, now=timezone.now()).reservation
    assert waiting.status == "pending"
    with django_capture_on_commit_callbacks(execute=True):
        services.release(holder.pk)
    assert Reservation.objects.get(pk=waiting.pk).status == "placed"
    assert Reservation.objects.get(pk=waiting.pk).conditions == []


def test_an_uncordon_wakes_pending_reservations(tenant, make_node, django_capture_on_commit_callbacks):
    from django.utils import timezone

    make_node("node-a", gpus=2)
    nodes.cordon("node-a")
    waiting = reserve(ask(1, start=from_real_now(1)), now=timezone.now()).reservation
    assert waiting.status == "pending"
    with django_capture_on_commit_callbacks(execute=True):
        nodes.uncordon("node-a")
    assert Reservation.objects.get(pk=waiting.pk).status == "placed"


def test_host_resources_need_the_devices_limits_capability_from_the_system(tenant, make_node):
    node = make_node("node-a", gpus=2, vcpu=16)
    NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="1", source="operator")
    result = reserve(ask(1, resources={"vcpu": 4}))
    assert result.reservation.status == "pending"
    assert (
        result.outcome.reason == "no node fits (1 node): 1 × labels: needs label bc.dev/cap.devices.limits=*"
    )
    NodeLabel.objects.filter(node=node).update(source="system")
    assert reserve(ask(1, resources={"vcpu": 4})).reservation.status == "placed"


def test_a_kubernetes_binding_needs_its_capability(tenant, make_node):
    make_node("node-a", gpus=2)
    result = reserve(ask(1, binding="kubernetes"))
    assert (
        result.outcome.reason
        == "no node fits (1 node): 1 × labels: needs label bc.dev/cap.binding.kubernetes=*"
    )


def test_a_dedicated_node_takes_only_its_tenants_work(tenant, other_tenant, make_node):
    make_node("node-a", gpus=2)
    nodes.dedicate("node-a", "acme")
    theirs = reserve(ask(1, tenant="globex"))
    assert theirs.outcome.reason == "no node fits (1 node): 1 × NoSchedule: dedicated=acme"
    assert reserve(ask(1, tenant="acme")).reservation.status == "placed"


def test_scalar_room_uses_floor_with_epsilon(tenant, make_node):
    """100 vcpu at ratio 0.29 offer 29, not 28: the last unit places."""
    node = make_node("node-a", gpus=1)
    NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="1", source="system")
    NodeResource.objects.create(node=node, resource="vcpu", allocatable=100, ratio=0.29)
    data = {"tenantId": "acme", "poolId": "lab-pool", "resources": {"vcpu": 29}, "during": ask()["during"]}
    assert reserve(data).reservation.status == "placed"
    assert claimed("vcpu", at=NOW + timedelta(hours=1)) == 29


def test_a_gpu_split_into_slices_is_not_offered_whole_and_its_slices_are(tenant, make_node):
    """
    node-a: GPU0 ── MIG-0, MIG-1 (mig-3g.40gb)     node-b: GPU0 (whole)
    """
    from inventory.models import Device

    node = make_node("node-a", gpus=1)
    make_node("node-b", gpus=1)
    parent = Device.objects.get(node=node)
    for i in range(2):
        Device.objects.create(node=node, uuid=f"MIG-{i}", device_class="mig-3g.40gb", parent=parent, index=i)
    from capacity.rollups import refresh_rollups

    refresh_rollups([node.pool_id])
    # The split GPU counts once, as its two slices; node-b's GPU is the pool's one whole GPU.
    assert capacity()["total"] == 1 and capacity(device_class="mig-3g.40gb")["total"] == 2
    whole = reserve(ask(1)).reservation
    assert atoms_of(whole) == ["GPU-node-b-0"]
    assert reserve(ask(1)).outcome.reason == "no node fits (2 nodes): 2 × fits: 0 of 1 gpu free"
    slice_request = {**ask(1), "devices": [{"class": "mig-3g.40gb", "count": 2}]}
    sliced = reserve(slice_request).reservation
    assert sliced.status == "placed" and atoms_of(sliced) == ["MIG-0", "MIG-1"]
    assert capacity(device_class="mig-3g.40gb", at=NOW + timedelta(hours=1))["allocated"] == 2


def test_reserve_runs_a_fixed_number_of_queries_whatever_the_pool_size(tenant, make_node, site):
    """Queries per placement stay flat from 5 to 60 nodes (the shortlist plans 16 nodes at first)."""
    counts = []
    for size in (5, 60):
        pool = Pool.objects.create(slug=f"p{size}", name="p", site=site)
        for i in range(size):
            make_node(f"p{size}-n{i:02d}", gpus=8, pool=pool)
        reserve(ask(1, pool=pool.slug))  # warm-up: the first one creates the quota usage row
        with CaptureQueriesContext(connection) as queries:
            assert reserve(ask(1, pool=pool.slug)).reservation.status == "placed"
        counts.append(len(queries.captured_queries))
    assert counts[0] == counts[1], counts


def test_a_gang_books_every_member_or_nothing(tenant, make_node):
    """
    node-a [ ][ ]   node-b [ ][ ]   node-c [x][x]  (full)
    A gang of two 2-GPU members lands on a and b; a gang of three does not fit at all.
    """
    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=2)
    reserve({**ask(2), "devices": [{"class": "gpu", "count": 2}], "excludeNodes": ["node-a", "node-b"]})
    three = reserve({**ask(2), "gang": {"size": 3}})
    assert three.reservation.status == "pending"
    assert three.outcome.reason.startswith("no gang of 3 nodes fits: only 2 nodes fit")
    two = reserve({**ask(2), "gang": {"size": 2}})
    assert two.reservation.status == "placed"
    assert sorted(a["nodeId"] for a in services.allocations_of(two.reservation)) == ["node-a", "node-b"]
    assert held("gpu", at=NOW + timedelta(hours=1)) == 2 + 4


def test_a_selector_reads_device_attributes_then_node_labels(tenant, make_node):
    """
    node-a: 2 × H100 (vramGiB 80)   node-b: 2 × L40S (vramGiB 48), label fabric.domain=nvl-a
    """
    from inventory.models import Device

    make_node("node-a", gpus=2)
    b = make_node("node-b", gpus=2)
    Device.objects.filter(node__name="node-a").update(
        attributes={"gpuProduct": "H100-SXM5-80GB", "vramGiB": 80}
    )
    Device.objects.filter(node=b).update(attributes={"gpuProduct": "L40S-48GB", "vramGiB": 48})
    NodeLabel.objects.create(node=b, key="fabric.domain", value="nvl-a")
    big = reserve({**ask(1), "devices": [{"class": "gpu", "count": 1, "selector": "vramGiB >= 80"}]})
    assert services.allocations_of(big.reservation)[0]["nodeId"] == "node-a"
    fabric = reserve(
        {**ask(1), "devices": [{"class": "gpu", "count": 2, "selector": "fabric.domain = nvl-a"}]}
    )
    assert services.allocations_of(fabric.reservation)[0]["nodeId"] == "node-b"
    none = reserve({**ask(1), "devices": [{"class": "gpu", "count": 1, "selector": "gpuProduct in (A100)"}]})
    assert none.outcome.reason == "no node fits (2 nodes): 2 × fits: 0 of 1 gpu free matching the selector"


def test_the_free_gpus_filter_counts_a_gpu_with_a_booked_slice_as_taken(tenant, make_node):
    """
    node-a: GPU0 ── MIG-a (booked now)   GPU1 free
    """
    from django.utils import timezone

    from capacity.rollups import refresh_rollups
    from inventory.filtersets import filter_nodes
    from inventory.models import Device, Node

    node = make_node("node-a", gpus=2)
    parent = Device.objects.get(uuid="GPU-node-a-0")
    Device.objects.create(node=node, uuid="MIG-a", device_class="mig-3g.40gb", parent=parent)
    refresh_rollups([node.pool_id])
    # The filter reads the real clock, so the booking covers the real now.
    start = int(timezone.now().timestamp() * 1000) - 3_600_000
    data = {
        **ask(1),
        "devices": [{"class": "mig-3g.40gb", "count": 1}],
        "during": {"start": start, "end": start + 7_200_000},
    }
    assert reserve(data).reservation.status == "placed"
    assert filter_nodes(Node.objects.all(), {"free_gpus": "2"}, services.EVERYONE).count() == 0
    assert filter_nodes(Node.objects.all(), {"free_gpus": "1"}, services.EVERYONE).count() == 1


def test_the_next_request_checks_the_kept_tenant_and_pool_in_its_insert_instead_of_reading_them(
    tenant, make_node
):
    make_node("node-a", gpus=4)
    reserve(ask(1))
    with CaptureQueriesContext(connection) as statements:
        assert reserve(ask(1)).reservation.status == "placed"
    sql = [q["sql"] for q in statements.captured_queries]
    assert not any("SELECT u.id, u.slug" in q for q in sql)  # no lookup of its own
    # Checked in the insert, which the charged-insert function runs.
    assert (
        sum(f"SELECT * FROM {insert.CHARGED.name}(" in q for q in sql) == 1
        and "md5(ROW(" in insert.CHARGED.create_sql
    )


def test_a_kept_lookup_gone_stale_is_read_afresh_before_anything_is_answered(
    tenant, other_tenant, make_node, pool
):
    """Between requests the pool is archived, reopened, then opened to globex alone."""
    make_node("node-a", gpus=4)
    reserve(ask(1))
    Pool.objects.filter(pk=pool.pk).update(archived=True)
    archived = reserve(ask(1)).reservation
    assert archived.status == "pending" and archived.conditions[0]["message"] == "the pool is archived"
    Pool.objects.filter(pk=pool.pk).update(archived=False)
    assert reserve(ask(1)).reservation.status == "placed"
    pool.tenants.set([other_tenant])
    with pytest.raises(CapacityError) as refused:
        reserve(ask(1))
    assert refused.value.code == "NOT_FOUND"
    assert Reservation.objects.count() == 3
    assert QuotaCharge.objects.count() == 2


def test_a_create_on_a_stale_kept_lookup_builds_its_planner_once_and_writes_once(
    tenant, make_node, monkeypatch
):
    """A node added between two requests bumps the pool's generation: the kept lookup is stale."""
    from capacity.placers.planning import Planner

    make_node("node-a", gpus=4)
    reserve(ask(1))
    make_node("node-b", gpus=4)
    built = []
    real_init = Planner.__init__

    def counted(self, *args, **kwargs):
        built.append(args[0].generation)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(Planner, "__init__", counted)
    with CaptureQueriesContext(connection) as statements:
        second = reserve(ask(1)).reservation
    assert second.status == "placed"
    assert len(built) == 1  # on the pool as it is now, not as the kept lookup had it
    assert built[0] == Pool.objects.get(slug="lab-pool").generation.generation
    assert sum("SELECT u.id, u.slug" in q["sql"] for q in statements.captured_queries) == 1  # read once
    assert Reservation.objects.count() == 2 and QuotaCharge.objects.filter(reservation=second).count() == 1
