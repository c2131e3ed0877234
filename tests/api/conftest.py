"""API fixtures: users with tokens (operator, acme, globex), clients, and a small two-pool inventory.

lab-pool is open to every tenant; globex-pool is globex's private pool. Bookings are made through
the API or the services only, so the capacity audit after each test finds no drift.
"""

import pytest

from api_people import (  # noqa: F401  (fixtures, shared with tests/usage)
    acme,
    as_acme,
    as_globex,
    as_operator,
    client_for,
    deterministic_placement,
    globex,
    make_user,
    operator,
)


@pytest.fixture
def anonymous(client_for):
    return client_for()


@pytest.fixture
def globex_pool(site, other_tenant):
    from inventory.models import Pool

    return Pool.objects.create(
        slug="globex-pool", name="Globex private", site=site, owner_tenant=other_tenant
    )


@pytest.fixture
def lab(two_labelled_hosts):
    """Two 4-GPU NVLinked hosts in lab-pool, with vcpu and memory and the capability label."""
    return two_labelled_hosts


@pytest.fixture
def globex_node(make_node, globex_pool):
    return make_node("globex-node", gpus=2, pool=globex_pool)


def body(gpus=1, tenant="acme", pool="lab-pool", **extra):
    """Return a create/preview body for `gpus` GPUs for a day."""
    return {
        "tenantId": tenant,
        "poolId": pool,
        "devices": [{"class": "gpu", "count": gpus}],
        "duration": "1d",
        **extra,
    }


@pytest.fixture
def ask():
    return body


@pytest.fixture
def reserve_as(client_for):
    """Create a reservation through the API as `user`; return the response JSON (asserting 201)."""

    def make(user, **kw):
        response = client_for(user).post("/api/v1/reservations", body(**kw), format="json")
        assert response.status_code == 201, response.json()
        return response.json()

    return make


@pytest.fixture
def lent(as_acme, as_globex, make_node, deterministic_placement):
    """acme's idle 2-GPU booking on node-a, lent to globex's 4-hour spot work: (owner id, work)."""
    from capacity.models import Reservation
    from capacity.models.reservations import IDLE
    from inventory.models import Pool
    from policy.models import PoolPolicy

    make_node("node-a", gpus=2)
    PoolPolicy.objects.create(pool=Pool.objects.get(slug="lab-pool"), lend_idle=True)
    owner = as_acme.post("/api/v1/reservations", body(2), format="json").json()
    idle = {"type": IDLE, "status": "True", "reason": "LowUtilization", "message": "0 %"}
    Reservation.objects.filter(pk=owner["id"]).update(conditions=[idle])
    work = as_globex.post(
        "/api/v1/reservations", body(2, tenant="globex", priority="spot", duration="4h"), format="json"
    )
    assert work.status_code == 201, work.json()
    return owner["id"], work.json()
