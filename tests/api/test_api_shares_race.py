"""Two operators promising the last GPUs of a pool at once: the pool's lock lets only one through."""

import threading

import pytest
from django.db import connection, connections, transaction

from capacity.placement import CapacityError
from inventory.models import Pool
from policy.models import PoolShare
from policy.shares import set_share

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_concurrent_guarantees_never_add_up_to_more_than_the_pool(lab, tenant, other_tenant):
    outcomes = []

    def promise(slug):
        try:
            set_share("lab-pool", slug, 5, None, None)
            outcomes.append("set")
        except CapacityError as err:
            outcomes.append(err.code)
        finally:
            connections.close_all()

    # Hold the pool's lock so both writers are inside set_share, on their own connections, before
    # either may read the others' guarantees: without the lock each would see none and both write.
    with transaction.atomic():
        Pool.objects.select_for_update().get(slug="lab-pool")
        threads = [threading.Thread(target=promise, args=(slug,)) for slug in ("acme", "globex")]
        for thread in threads:
            thread.start()
        with connection.cursor() as cur:
            for _ in range(200):
                # pg_stat_activity is read once a transaction unless the snapshot is cleared.
                cur.execute("SELECT pg_stat_clear_snapshot()")
                cur.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
                if cur.fetchone()[0] >= 2:
                    break
                threading.Event().wait(0.05)
    for thread in threads:
        thread.join(10)
    assert sorted(outcomes) == ["INVALID_INPUT", "set"]
    assert sum(PoolShare.objects.values_list("guaranteed_gpus", flat=True)) == 5
