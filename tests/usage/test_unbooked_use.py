"""Use without a booking: processes on a GPU no reservation holds show on the node page, as a metric and event.

lab: node-a and node-b, 4 GPUs each, in lab-pool. acme books 4 GPUs (one whole node, the busy
node); the other node's GPU 3 runs two processes (42,000 MiB) from its sixth sampled minute:

    busy node  GPU 0-3   booked, 1 process each      -> not unbooked use
    free node  GPU 3     0 processes for 5 minutes, then 2 processes for 15   -> unbooked since minute 5
"""

import dataclasses
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.utils import timezone

from capacity import services
from capacity.conf import placer_config
from capacity.models import Allocation
from inventory.models import Device, DeviceSample, Node
from metrics.state import DatabaseCollector
from usage.models import UnbookedUse
from usage.unbooked import mark_unbooked_use
from webhooks.models import Event, Subscription


@pytest.fixture
def held(two_labelled_hosts, tenant):
    config = dataclasses.replace(placer_config(), random=None)
    data = {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": 4}],
        "duration": "1d",
    }
    return services.reserve(data, config=config).reservation


def sample(device, start, minutes, processes, mib=0, first=0):
    DeviceSample.objects.bulk_create(
        DeviceSample(
            device=device,
            minute=start + timedelta(minutes=m),
            gpu_percent=50,
            processes=processes,
            process_mib=mib,
        )
        for m in range(first, minutes)
    )


def unbooked_gauge():
    family = next(f for f in DatabaseCollector().collect() if f.name == "berth_unbooked_use_devices")
    return {s.labels["pool"]: s.value for s in family.samples}


def test_processes_on_an_unbooked_gpu_are_named_once_per_spell_and_booked_ones_never(held):
    ops = User.objects.create_user("ops")
    ops.groups.add(Group.objects.get_or_create(name="operators")[0])
    Subscription.objects.create(
        owner=ops, url="https://hooks.example/x", events=["node.unbooked_use"], secret="s"
    )
    busy = Allocation.objects.get(reservation=held).node
    free = Node.objects.exclude(pk=busy.pk).get(name__in=["node-a", "node-b"])
    start = timezone.now().replace(second=0, microsecond=0) + timedelta(minutes=1)
    for device in Device.objects.filter(node=busy):
        sample(device, start, 20, processes=1, mib=1000)
    gpu3 = Device.objects.get(node=free, index=3)
    sample(gpu3, start, 5, processes=0)
    sample(gpu3, start, 20, processes=2, mib=42_000, first=5)

    assert mark_unbooked_use(start + timedelta(minutes=20)) == (1, 0)
    since = start + timedelta(minutes=5)
    said = f"GPU 3: 2 processes, 41 GiB, since {since:%H:%M} UTC, no booking"
    assert list(UnbookedUse.objects.values_list("node__name", "message")) == [(free.name, said)]
    assert unbooked_gauge() == {"lab-pool": 1}
    # Still going at the next look: the same spell, no second event.
    sample(gpu3, start, 21, processes=2, mib=42_000, first=20)
    assert mark_unbooked_use(start + timedelta(minutes=21)) == (0, 0)
    assert list(Event.objects.filter(type="node.unbooked_use").values_list("node_id", "reason")) == [
        (free.pk, said)
    ]

    page = Client()
    page.force_login(ops)
    html = page.get(f"/nodes/{free.name}/").text
    assert 'id="unbooked-use"' in html and said in html
    assert 'id="unbooked-use"' not in page.get(f"/nodes/{busy.name}/").text

    # The processes end: the row goes, and the gauge with it.
    sample(gpu3, start, 22, processes=0, first=21)
    assert mark_unbooked_use(start + timedelta(minutes=22)) == (0, 1)
    assert not UnbookedUse.objects.exists() and unbooked_gauge() == {"lab-pool": 0}
