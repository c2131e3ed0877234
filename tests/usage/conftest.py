"""Usage fixtures: users with tokens (operator, acme, globex), their API clients, two 4-GPU hosts.

The same fixtures as tests/api and tests/cli give (the usage report is read through the API, the
page and the command alike); placement is deterministic, so tests know where a request lands.
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

    def make(username, *, tenants=(), operator=False):
        # No password: tests log in by token or force_login.
        user = User.objects.create_user(username=username)
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
def lab(two_labelled_hosts):
    """Two 4-GPU NVLinked hosts in lab-pool, with vcpu and memory and the capability label."""
    return two_labelled_hosts


@pytest.fixture
def hosts(tenant, two_labelled_hosts):
    """node-a and node-b, four NVLinked GPUs each, in lab-pool; acme."""
    return two_labelled_hosts


@pytest.fixture
def ask():
    """Return a function making a create/preview body for `gpus` GPUs for a day."""

    def body(gpus=1, tenant="acme", pool="lab-pool", **extra):
        return {
            "tenantId": tenant,
            "poolId": pool,
            "devices": [{"class": "gpu", "count": gpus}],
            "duration": "1d",
            **extra,
        }

    return body


@pytest.fixture
def shell(monkeypatch):
    """Run a command as `manage.py` would from a shell; return (exit code, stdout, stderr)."""
    from importlib import import_module
    from io import StringIO

    from django.core.management import get_commands
    from django.db import connections

    # run_from_argv closes every connection when it ends, which would end the test's transaction.
    monkeypatch.setattr(connections, "close_all", lambda: None)

    def call(name, *argv):
        out, err = StringIO(), StringIO()
        app = get_commands()[name]  # the app that holds the command
        command = import_module(f"{app}.management.commands.{name}").Command(stdout=out, stderr=err)
        try:
            command.run_from_argv(["manage.py", name, *argv])
            code = 0
        except SystemExit as exc:
            code = exc.code
        return code, out.getvalue(), err.getvalue()

    return call
