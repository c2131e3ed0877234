"""`seed_demo` builds the demo once; running it again changes nothing."""

import io

import pytest
from django.apps import apps
from django.core.management import call_command

from capacity.models import DeviceBooking, PoolCapacityRollup
from inventory.models import Device, DeviceLink, Node, NodeLabel, Pool

pytestmark = pytest.mark.django_db


def snapshot():
    counts = {m._meta.label: m.objects.count() for m in apps.get_models() if m._meta.app_label != "sessions"}
    rollups = list(
        PoolCapacityRollup.objects.order_by("pk").values_list(
            "pool__slug", "device_class", "total", "maintenance"
        )
    )
    bookings = sorted(DeviceBooking.objects.values_list("device__uuid", "during"))
    return counts, rollups, bookings


def test_seed_demo_twice_gives_the_same_data():
    out = io.StringIO()
    call_command("seed_demo", "--no-progress", stdout=out, stderr=io.StringIO())
    first = snapshot()
    call_command("seed_demo", "--no-progress", stdout=out, stderr=io.StringIO())
    assert snapshot() == first
    assert "0 new bookings" in out.getvalue()


def test_the_demo_holds_the_promised_shapes_and_states():
    call_command("seed_demo", "--no-progress", stdout=io.StringIO(), stderr=io.StringIO())
    assert Pool.objects.count() == 3
    assert Node.objects.count() >= 60
    dgx = Node.objects.get(name="ams1-dgx-01")
    assert DeviceLink.objects.filter(node=dgx, rank="NV").count() == 28
    assert sorted(set(Device.objects.filter(node=dgx).values_list("numa_node", flat=True))) == [0, 1]
    pcie = Node.objects.get(name="sfo2-pcie-01")
    assert set(DeviceLink.objects.filter(node=pcie).values_list("rank", flat=True)) == {"PIX", "PXB", "SYS"}
    a100 = Node.objects.get(name="sfo2-a100-01")
    assert Device.objects.filter(node=a100, parent__isnull=False).count() == 9
    assert Node.objects.filter(cordoned=True).count() >= 2
    assert Node.objects.filter(maintenance=True).count() == 1
    assert Node.objects.filter(provision_state="provisioning").count() == 1
    assert Node.objects.filter(connectivity="disconnected").count() == 1
    assert Node.objects.filter(no_schedule_reasons__contains=["dedicated=acme"]).count() == 1
    assert Node.objects.filter(owner_tenant__slug="globex").count() == 1
    assert NodeLabel.objects.filter(key="bc.dev/cap.devices.limits", source="system").exists()
    assert DeviceBooking.objects.exists()


def test_the_mig_capable_label_agrees_with_the_devices(db):
    """Every demo node's mig.capable label says what its GPUs' migCapable attribute says."""
    from devtools.demo import build_demo
    from inventory.models import Device, NodeLabel

    build_demo()
    for label in NodeLabel.objects.filter(key="mig.capable").select_related("node"):
        capable = {
            d.attributes.get("migCapable")
            for d in Device.objects.filter(node=label.node, parent__isnull=True)
            if "migCapable" in d.attributes
        }
        assert capable == {label.value == "true"}, label.node.name
