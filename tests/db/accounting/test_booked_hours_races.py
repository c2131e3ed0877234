"""Booked hours under concurrency: bookings, releases and the fold racing for one key lose nothing."""

from datetime import timedelta

import pytest

from capacity import services
from capacity.audit import audit
from capacity.models import Reservation
from usage.booked_hours import fold_booked_hours

from booking import NOW, ask, reserve
from hours import kept, recount
from racing import run_threads

pytestmark = pytest.mark.django_db(transaction=True)


def test_bookings_and_releases_of_one_tenant_pool_model_and_day_racing_with_the_fold_lose_no_hour(
    tenant, other_tenant, make_node
):
    """
    node-a, node-b: 8 GPUs each, one model. Four rounds: six connections book 1 GPU for 2 h each
    (acme and globex, the same day), one releases an earlier booking, one folds, all at once.
    """
    make_node("node-a", gpus=8)
    make_node("node-b", gpus=8)
    for round_ in range(4):
        earlier = reserve(ask(1, start=round_ * 3, hours=2)).reservation

        def client(i, round_=round_, earlier=earlier):
            if i == 0:
                services.release(earlier.pk, now=NOW + timedelta(hours=round_ * 3 + 1))
            elif i == 1:
                fold_booked_hours()
            else:
                reserve(ask(1, tenant="acme" if i % 2 else "globex", start=round_ * 3, hours=2))

        assert run_threads(8, client) == []
    assert Reservation.objects.filter(status="placed").count() == 4 * 6
    assert kept() == recount()
    fold_booked_hours()
    assert kept() == recount()
    assert audit() == []
