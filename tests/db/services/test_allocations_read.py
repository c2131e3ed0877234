"""A reservation's allocations as the API and the pages read them (services.allocations_for): one statement.

The atoms are what the request asked for: a whole-node lease books each partitioned GPU with its
slices (so the EXCLUDE constraint sees either's conflicts), and names the GPU alone; slices booked
without their GPU are named. Live and history rows read alike.
"""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from capacity import services
from capacity.models import DeviceBooking
from inventory.models import Device

from booking import ask, lease, partitioned_node, reserve

pytestmark = pytest.mark.django_db


def test_a_lease_of_a_partitioned_node_names_each_gpu_once_and_no_slice(tenant, make_node):
    node = partitioned_node(make_node)
    placed = reserve(lease()).reservation
    assert placed.status == "placed", placed.conditions
    booked = set(
        DeviceBooking.objects.filter(allocation__reservation=placed).values_list("device__uuid", flat=True)
    )
    slices = set(Device.objects.filter(node=node, parent__isnull=False).values_list("uuid", flat=True))
    assert slices <= booked  # the slices are booked with their GPUs ...
    [allocation] = services.allocations_of(placed)
    gpus = list(
        Device.objects.filter(node=node, parent__isnull=True).order_by("index").values_list("uuid", flat=True)
    )
    assert allocation["atoms"] == gpus  # ... and named by them alone, in index order
    assert allocation["nodeId"] == "node-a" and allocation["releasedAt"] is None
    assert allocation["resources"] == placed.allocations.get().resources


def test_slices_booked_without_their_gpu_are_named(tenant, make_node):
    partitioned_node(make_node)
    data = ask(1)
    data["devices"] = [{"class": "mig-3g.40gb", "count": 2}]
    placed = reserve(data).reservation
    assert placed.status == "placed", placed.conditions
    [allocation] = services.allocations_of(placed)
    assert allocation["atoms"] == ["MIG-node-a-0-0", "MIG-node-a-0-1"]


def test_many_reservations_are_read_in_one_statement_each_with_its_own(tenant, make_node):
    make_node("node-a", gpus=8)
    placed = [reserve(ask(2)).reservation for _ in range(3)]
    with CaptureQueriesContext(connection) as queries:
        read = services.allocations_for(placed)
    assert len(queries.captured_queries) == 1
    atoms = [a["atoms"] for r in placed for a in read[r.pk]]
    assert all(len(a) == 2 for a in atoms) and len({u for a in atoms for u in a}) == 6
    assert services.allocations_for([]) == {}
