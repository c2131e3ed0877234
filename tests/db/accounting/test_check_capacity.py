"""check_capacity recomputes rollups, scalar claims and quota charges and reports every drift."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from capacity.audit import audit
from capacity.models import PoolCapacityRollup, QuotaCharge, ScalarClaim
from inventory.models import NodeLabel

from booking import ask, reserve


def test_a_consistent_database_has_no_drift(tenant, make_node):
    make_node("node-a", gpus=4, vcpu=8)
    reserve(ask(2))
    out = io.StringIO()
    call_command("check_capacity", stdout=out)
    assert out.getvalue().strip() == "check_capacity: no drift"


@pytest.mark.allow_drift
def test_every_kind_of_drift_is_reported_and_fails_the_command(tenant, make_node):
    node = make_node("node-a", gpus=4, vcpu=8)
    NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="1", source="system")
    reservation = reserve(ask(2, resources={"vcpu": 3})).reservation
    PoolCapacityRollup.objects.filter(device_class="gpu").update(total=5)
    ScalarClaim.objects.filter(resource="vcpu").update(amount=2)
    QuotaCharge.objects.filter(resource="gpu").update(amount=7)
    lines = audit()
    assert any(line.startswith("rollup lab-pool/gpu: stored") for line in lines)
    allocation = reservation.allocations.get().pk
    assert any(line.startswith(f"scalar allocation {allocation}/vcpu: claimed (2,") for line in lines)
    assert any(line.startswith(f"quota reservation {reservation.pk}/gpu: charged (7,") for line in lines)
    out = io.StringIO()
    with pytest.raises(CommandError) as err:
        call_command("check_capacity", stdout=out)
    assert err.value.returncode == 1
    assert out.getvalue().count("drift: ") == 3
