"""Notice under concurrency: regular requests racing for the same spot work each give one notice."""

from datetime import timedelta

import pytest

from capacity.audit import audit
from capacity.models import Reservation
from inventory.models import Pool
from policy.models import PoolPolicy

from booking import ask, reserve
from racing import run_threads

pytestmark = pytest.mark.django_db(transaction=True)


def test_regular_requests_racing_for_spot_work_under_notice_each_take_one_and_give_one_notice(
    tenant, other_tenant, make_node
):
    """
    node-a, node-b: 4 GPUs each, all globex's spot work; a 10m notice. Six connections of acme ask
    for 4 GPUs at once, three rounds (the first now, the others later): each round two are placed,
    each giving one spot reservation notice, four wait.
    """
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    PoolPolicy.objects.create(pool=Pool.objects.get(slug="lab-pool"), spot_notice=timedelta(minutes=10))
    for round_ in range(3):
        victims = [
            reserve(ask(4, tenant="globex", priority="spot", start=round_ * 48)).reservation for _ in "ab"
        ]
        placed = []

        def client(i, round_=round_, placed=placed):
            result = reserve(ask(4, start=round_ * 48))
            if result.reservation.status == "placed":
                placed.append(result.reservation.pk)

        assert run_threads(6, client) == []
        assert len(placed) == 2
        takers = set()
        for victim in Reservation.objects.filter(pk__in=[v.pk for v in victims]):
            [notice] = victim.conditions
            assert (victim.status, notice["type"]) == ("placed", "PreemptAt")
            takers.add(notice["reservationId"])
        assert takers == set(placed)
    assert audit() == []
