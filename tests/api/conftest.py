"""API fixtures: users with tokens (operator, acme, globex), clients, and a small two-pool inventory.

lab-pool is open to every tenant; globex-pool is globex's private pool. Bookings are made through
the API or the services only, so the capacity audit after each test finds no drift.
"""

import pytest


@pytest.fixture(autouse=True)
def deterministic_placement(settings):
    """Pick the best node every time (TOP_N 1), so tests know where a request lands."""
    settings.CAPACITY = {**settings.CAPACITY, "SCHEDULER": {**settings.CAPACITY["SCHEDULER"], "TOP_N": 1}}


@pytest.fixture
def make_user(db):
    from django.contrib.auth.models import Group, User
    from rest_framework.authtoken.models import Token

    def make(username, *, tenants=(), operator=False, staff=False):
        # No password: hashing one costs a third of a second, and tests log in by token or force_login.
        user = User.objects.create_user(username=username, is_staff=staff)
        if operator:
            user.groups.add(Group.objects.get_or_create(name="operators")[0])
        for tenant in tenants:
            tenant.users.add(user)
        Token.objects.create(user=user)
        return user

    return make


@pytest.fixture
def operator(make_user):
    return make_user("operator", operator=True)


@pytest.fixture
def acme(make_user, tenant):
    return make_user("acme", tenants=[tenant])


@pytest.fixture
def globex(make_user, other_tenant):
    return make_user("globex", tenants=[other_tenant])


@pytest.fixture
def client_for():
    """Return an APIClient that authenticates with the user's token."""
    from rest_framework.test import APIClient

    def make(user=None):
        client = APIClient()
        if user is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Token {user.auth_token.key}")
        return client

    return make


@pytest.fixture
def as_operator(client_for, operator):
    return client_for(operator)


@pytest.fixture
def as_acme(client_for, acme):
    return client_for(acme)


@pytest.fixture
def as_globex(client_for, globex):
    return client_for(globex)


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
