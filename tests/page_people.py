"""People for page tests: users in their roles and clients logged in as them.

Imported by the conftests of tests/web and tests/whatif (pytest shares no fixtures across sibling
folders).
"""

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
