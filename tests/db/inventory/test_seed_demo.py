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


def touched_state() -> dict:
    """Return every row an operator or tenant may change, as the database holds it."""
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from capacity.models import MaintenanceWindow, Quota, Reservation
    from inventory.models import NodeReport, Tenant
    from policy.models import PoolPolicy, PoolShare
    from trail.models import AuditRecord

    def rows(model, *fields):
        return list(model.objects.order_by("pk").values_list(*fields))

    return {
        "shares": rows(PoolShare, "pool__slug", "tenant__slug", "guaranteed_gpus", "lending_limit_gpus"),
        "policies": list(PoolPolicy.objects.order_by("pk").values()),
        "quotas": rows(Quota, "tenant__slug", "resource", "limit"),
        "tokens": rows(Token, "key", "user__username", "created"),
        "reservations": rows(Reservation, "pk", "status", "released_at", "idempotency_key"),
        "bookings": sorted(DeviceBooking.objects.values_list("pk", "during")),
        "nodes": rows(Node, "name", "cordoned", "maintenance", "drain_started_at"),
        "windows": rows(MaintenanceWindow, "pk", "starts_at", "ends_at"),
        "reports": rows(NodeReport, "node__name", "at", "by"),
        "members": rows(Tenant.users.through, "tenant__slug", "user__username"),
        "groups": rows(User.groups.through, "user__username", "group__name"),
        "audit": rows(AuditRecord, "pk", "actor", "action", "object"),
    }


def test_a_second_seed_on_an_untouched_demo_changes_no_row():
    call_command("seed_demo", "--no-progress", stdout=io.StringIO(), stderr=io.StringIO())
    first = touched_state(), snapshot()
    call_command("seed_demo", "--no-progress", stdout=io.StringIO(), stderr=io.StringIO())
    assert (touched_state(), snapshot()) == first


def test_seeding_again_keeps_what_operators_and_tenants_changed_and_audits_nothing_new():
    from django.contrib.auth.models import User
    from django.test import Client
    from django.urls import reverse

    from capacity import services
    from capacity.models import MaintenanceWindow, Quota, Reservation
    from identity.tokens import issue_token
    from inventory import services as inventory
    from inventory.models import Tenant
    from maintenance import windows
    from policy.pool_policy import parse_policy, set_policy
    from policy.shares import delete_share, set_share
    from trail.context import acting_as

    call_command("seed_demo", "--no-progress", stdout=io.StringIO(), stderr=io.StringIO())
    with acting_as("operator"):
        set_share("h100-prod", "globex", 58, None, None)
        delete_share("h100-prod", "acme")
        set_policy("a100-mig", parse_policy({"idleWarnAfter": "4h", "allowKeepWhenIdle": False}))
        inventory.cordon("ams1-dgx-01", reason="fan")
        inventory.uncordon("ams1-dgx-03")
        windows.cancel(MaintenanceWindow.objects.get().pk)
        services.release(Reservation.objects.get(idempotency_key="demo-now-3").pk)
        issue_token(User.objects.get(username="acme"), days=7)
    services.reserve(
        {
            "tenantId": "acme",
            "poolId": "pcie-batch",
            "devices": [{"class": "gpu", "count": 1}],
            "duration": "2h",
        }
    )
    Tenant.objects.get(slug="globex").users.clear()
    admin = Client()
    admin.force_login(User.objects.get(username="operator"))
    gpu = Quota.objects.get(tenant__slug="acme", resource="gpu")
    change = admin.post(
        reverse("admin:capacity_quota_change", args=[gpu.pk]),
        {"tenant": gpu.tenant_id, "resource": "gpu", "limit": 100},
    )
    vcpu = Quota.objects.get(tenant__slug="globex", resource="vcpu")
    delete = admin.post(reverse("admin:capacity_quota_delete", args=[vcpu.pk]), {"post": "yes"})
    assert (change.status_code, delete.status_code) == (302, 302)
    before = touched_state(), snapshot()[0]

    call_command("seed_demo", "--no-progress", stdout=io.StringIO(), stderr=io.StringIO())

    after = touched_state(), snapshot()[0]
    assert after == before  # the audit's rows among them: none new, the seed's or anyone's
    state = after[0]
    assert ("h100-prod", "globex", 58, None) in state["shares"] and len(state["shares"]) == 1
    assert ("acme", "gpu", 100) in state["quotas"] and ("globex", "vcpu", 4096) not in state["quotas"]
    assert state["windows"] == [] and not any(m[0] == "globex" for m in state["members"])
