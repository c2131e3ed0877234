"""The pools' live counts kept in the cache equal the counts read again, at every write and moment.

Transactional: the booking version moves as a transaction commits, as a request's does.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from capacity import services
from capacity.rollups import _live, live_counts
from inventory.services import cordon

pytestmark = pytest.mark.django_db(transaction=True)


def ask(start, hours=1):
    return {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": 2}],
        "during": {
            "start": int(start.timestamp() * 1000),
            "end": int((start + timedelta(hours=hours)).timestamp() * 1000),
        },
    }


def test_kept_counts_follow_bookings_releases_and_the_moments_bookings_start_and_end(tenant, pool, make_node):
    """
    node-a: 4 GPUs in lab-pool. A booking of 2 GPUs starts a minute from now, for an hour.
    """
    make_node("node-a", gpus=4)
    ids = [pool.pk]
    now = timezone.now().replace(microsecond=0) + timedelta(seconds=1)
    assert live_counts(ids, now) == _live(ids, now) == {(pool.pk, "gpu"): (0, 0, 4)}
    start = now + timedelta(minutes=1)
    placed = services.reserve(ask(start)).reservation
    # The booking moved the version: read again, booked later.
    assert live_counts(ids, now) == _live(ids, now) == {(pool.pk, "gpu"): (0, 2, 4)}
    assert live_counts(ids, now + timedelta(seconds=30)) == {(pool.pk, "gpu"): (0, 2, 4)}  # kept
    # At its start time alone changes them: not read from before it.
    at_start = start
    assert live_counts(ids, at_start) == _live(ids, at_start) == {(pool.pk, "gpu"): (2, 0, 2)}
    end = start + timedelta(hours=1)
    assert live_counts(ids, end - timedelta(microseconds=1)) == {(pool.pk, "gpu"): (2, 0, 2)}
    assert live_counts(ids, end) == _live(ids, end) == {(pool.pk, "gpu"): (0, 0, 4)}
    # A moment before the kept one is never answered from it.
    assert live_counts(ids, now) == {(pool.pk, "gpu"): (0, 2, 4)}
    services.release(placed.pk)
    assert live_counts(ids, now) == _live(ids, now) == {(pool.pk, "gpu"): (0, 0, 4)}


def test_a_cordon_moves_the_generation_and_the_free_count_with_it(tenant, pool, make_node):
    node = make_node("node-a", gpus=4)
    ids = [pool.pk]
    now = timezone.now()
    assert live_counts(ids, now)[(pool.pk, "gpu")] == (0, 0, 4)
    cordon(node.name, "disk")
    assert live_counts(ids, now) == _live(ids, now)
    assert live_counts(ids, now)[(pool.pk, "gpu")] == (0, 0, 0)
