"""The worker's round starts a maintenance window whose time has come and ends one that is over."""

from datetime import timedelta

import pytest
from django.utils import timezone

from capacity.models import MaintenanceWindow, MaintenanceWindowNode
from capacity.worker import run_round

from booking import config

pytestmark = pytest.mark.django_db


def test_a_round_puts_the_nodes_in_maintenance_at_the_start_and_takes_them_out_at_the_end(tenant, make_node):
    node = make_node("node-a", gpus=2)
    now = timezone.now()
    # Written as if scheduled earlier (the API refuses a window in the past): it started a minute ago.
    window = MaintenanceWindow.objects.create(
        starts_at=now - timedelta(minutes=1), ends_at=now + timedelta(hours=1), reason="firmware"
    )
    MaintenanceWindowNode.objects.create(
        window=window, node=node, starts_at=window.starts_at, ends_at=window.ends_at
    )
    run_round(config())
    node.refresh_from_db()
    window.refresh_from_db()
    assert node.maintenance and window.started_at is not None
    assert MaintenanceWindowNode.objects.get(window=window).switched
    # Its end comes: the next round takes the node out.
    MaintenanceWindow.objects.filter(pk=window.pk).update(
        starts_at=now - timedelta(hours=2), ends_at=now - timedelta(seconds=1)
    )
    run_round(config())
    node.refresh_from_db()
    window.refresh_from_db()
    assert not node.maintenance and window.ended_at is not None
