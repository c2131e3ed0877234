"""People for API-level tests: users with tokens (operator, acme, globex) and their API clients.

Imported by the conftests of tests/api and tests/usage (pytest shares no fixtures across sibling
folders), so both read the usage report and the API through the same users.
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
