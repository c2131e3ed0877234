"""Retrying pending work is fair across tenants and bounded inside a release."""

from datetime import timedelta

from capacity import services
from capacity.models import Reservation

from booking import NOW, ask, reserve


def test_one_tenants_pile_of_never_fitting_requests_does_not_starve_another(tenant, other_tenant, make_node):
    """
    node-a: 4 GPUs, acme holds them all. acme then asks 20 times for 5 GPUs (never fits on a 4-GPU
    node) and globex once for 1 GPU. After acme releases, a retry of 8 places globex's request.
    """
    make_node("node-a", gpus=4)
    holder = reserve(ask(4)).reservation
    for _ in range(20):
        assert reserve(ask(5)).reservation.status == "pending"
    theirs = reserve(ask(1, tenant="globex")).reservation
    assert theirs.status == "pending"
    services.release(holder.pk, now=NOW - timedelta(hours=1))
    assert services.retry_pending([theirs.pool_id], now=NOW, limit=8) == 1
    theirs.refresh_from_db()
    assert theirs.status == "placed"
    assert Reservation.objects.filter(tenant=tenant, status="pending").count() == 20
