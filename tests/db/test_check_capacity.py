"""check_capacity recomputes what capacity keeps by deltas and reports every drift."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from capacity.audit import audit
from capacity.models import PoolCapacityRollup, QuotaUsage
from inventory.models import NodeResource

from booking import ask, reserve


def test_a_consistent_database_has_no_drift(tenant, make_node):
    make_node("node-a", gpus=4, vcpu=8)
    reserve(ask(2))
    out = io.StringIO()
    call_command("check_capacity", stdout=out)
    assert out.getvalue().strip() == "check_capacity: no drift"


@pytest.mark.allow_drift
def test_every_kind_of_drift_is_reported_and_fails_the_command(tenant, make_node):
    make_node("node-a", gpus=4, vcpu=8)
    reserve(ask(2))
    PoolCapacityRollup.objects.filter(device_class="gpu").update(allocated=5)
    NodeResource.objects.filter(resource="vcpu").update(allocated=3)
    QuotaUsage.objects.filter(resource="gpu").update(used=7)
    lines = audit()
    assert any(line.startswith("rollup lab-pool/gpu: stored") for line in lines)
    assert "scalar node-a/vcpu: allocated 3, claimed 0" in lines
    assert any(line.startswith("quota tenant") and "used 7, held 2" in line for line in lines)
    out = io.StringIO()
    with pytest.raises(CommandError) as err:
        call_command("check_capacity", stdout=out)
    assert err.value.returncode == 1
    assert out.getvalue().count("drift: ") == 3
