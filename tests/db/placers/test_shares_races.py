"""Lender and borrower booking a pool's last GPUs at once: guarantees always hold.

lab-pool: node-a and node-b, 4 GPUs each; acme and globex are guaranteed 4 each. In each round
(its own window) globex holds its 4, then at once globex asks for 4 more (it would borrow acme's
unused guarantee) and acme for its 4. Whichever commits first, acme ends placed; globex's second
booking ends pending (acme was first) or preempted (reclaimed); nothing is double-booked.
"""

import pytest

from capacity import services
from capacity.audit import audit
from capacity.models import Reservation
from capacity.placers.batch import place_batch
from capacity.placers.take_back import RECLAIMED_REASON
from inventory.models import Pool
from policy.shares import set_share

from booking import NOW, ask, config, reserve
from racing import run_threads

pytestmark = pytest.mark.django_db(transaction=True)
ROUNDS = 6


@pytest.fixture
def shared_lab(make_node, tenant, other_tenant):
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    set_share("lab-pool", "acme", 4, None, None)
    set_share("lab-pool", "globex", 4, None, None)


def assert_guarantees_held(acme, borrower, lender_own):
    for r in (acme, borrower, lender_own):
        r.refresh_from_db()
    assert acme.status == "placed", acme.conditions
    assert lender_own.status == "placed"
    assert borrower.status in ("pending", "preempted")
    if borrower.status == "preempted":
        assert borrower.conditions[0]["reason"] == RECLAIMED_REASON


def test_lender_and_borrower_racing_through_reserve_leave_the_guarantee_whole(shared_lab):
    for round_ in range(ROUNDS):
        start = round_ * 48
        own = reserve(ask(4, tenant="globex", start=start)).reservation
        made = {}

        def client(i, start=start, made=made):
            if i == 0:
                made["acme"] = reserve(ask(4, start=start)).reservation
            else:
                made["borrower"] = reserve(ask(4, tenant="globex", start=start)).reservation

        assert run_threads(2, client) == []
        assert_guarantees_held(made["acme"], made["borrower"], own)
    assert audit() == []


def test_lender_and_borrower_racing_as_the_worker_places_them_leave_the_guarantee_whole(shared_lab):
    """The borrower is queued for the pool-lease placer; its batch runs while acme books inline."""
    pool = Pool.objects.get(slug="lab-pool").pk
    lease = config(placer="pool-lease")
    for round_ in range(ROUNDS):
        start = round_ * 48
        own = reserve(ask(4, tenant="globex", start=start)).reservation
        borrower = services.reserve(ask(4, tenant="globex", start=start), now=NOW, config=lease).reservation
        assert borrower.status == "pending"
        made = {}

        def client(i, start=start, made=made):
            if i == 0:
                made["acme"] = reserve(ask(4, start=start)).reservation
            else:
                place_batch(pool, lease)

        assert run_threads(2, client) == []
        assert_guarantees_held(made["acme"], borrower, own)
    assert Reservation.objects.filter(tenant__slug="acme", status="placed").count() == ROUNDS
    assert audit() == []
