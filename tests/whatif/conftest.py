"""What-if tests, beside the app they test: the simulator, the queue, the worker's job and the pages.

The helper modules of the database and page tests are imported by plain name (`from booking import
ask`, `from databases import this_database_url`, `from web_helpers import HX`): their folders are
put on sys.path here, before any test module under this folder is imported. The page tests' users
and clients are made as tests/web/conftest.py makes them.
"""

import sys
from pathlib import Path

import pytest
from django.test import Client

TESTS = Path(__file__).resolve().parents[1]
for folder in (TESTS / "db", TESTS / "web"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


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


def _client(user):
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def op(operator):
    """A client logged in as the operator."""
    return _client(operator)


@pytest.fixture
def alice(tenant):
    """A client logged in as a user of tenant acme."""
    from django.contrib.auth.models import User

    user = User.objects.create_user("alice", password="pw-alice-123")
    tenant.users.add(user)
    return _client(user)
