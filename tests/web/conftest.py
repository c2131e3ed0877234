"""Fixtures for the browser views: users in their roles, logged-in clients, small labs, bookings made through services."""

import pytest
from django.test import Client


@pytest.fixture
def operators_group(db):
    from django.contrib.auth.models import Group

    return Group.objects.get_or_create(name="operators")[0]


@pytest.fixture
def operator(operators_group):
    """An operator by group membership alone (not staff), so the group check is what lets them in."""
    from django.contrib.auth.models import User

    user = User.objects.create_user("olga", password="pw-olga-123")
    user.groups.add(operators_group)
    return user


@pytest.fixture
def acme_user(tenant):
    from django.contrib.auth.models import User

    user = User.objects.create_user("alice", password="pw-alice-123")
    tenant.users.add(user)
    return user


@pytest.fixture
def globex_user(other_tenant):
    from django.contrib.auth.models import User

    user = User.objects.create_user("bob", password="pw-bob-123")
    other_tenant.users.add(user)
    return user


@pytest.fixture
def two_hosts(make_node, tenant, other_tenant):
    """node-a and node-b in lab-pool, 4 GPUs each; tenants acme and globex.

    Bookings land on node-a first (ties go by name).
    """
    for name in ("node-a", "node-b"):
        make_node(name, gpus=4)


@pytest.fixture
def three_hosts_with_scalars(make_node, tenant, other_tenant):
    """node-a, node-b and node-c in lab-pool: 4 GPUs, vcpu 64 and memoryGiB 512 each; tenants acme and globex."""
    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=4, vcpu=64, memory=512)


def _client(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def op(operator):
    """A client logged in as the operator."""
    return _client(operator)


@pytest.fixture
def alice(acme_user):
    """A client logged in as a user of tenant acme."""
    return _client(acme_user)


@pytest.fixture
def bob(globex_user):
    """A client logged in as a user of tenant globex."""
    return _client(globex_user)


@pytest.fixture
def book():
    """Return a function that books through the services (the audit needs real bookings), starting now.

    Without the random top-N pick, so tests know the node: the fullest that fits, ties on name.
    """
    import dataclasses

    from capacity import services
    from capacity.conf import placer_config

    config = dataclasses.replace(placer_config(), random=None)

    def reserve(tenant="acme", gpus=1, pool="lab-pool", duration="1d", **extra):
        data = {
            "tenantId": tenant,
            "poolId": pool,
            "devices": [{"class": "gpu", "count": gpus}],
            "duration": duration,
            **extra,
        }
        return services.reserve(data, config=config).reservation

    return reserve
