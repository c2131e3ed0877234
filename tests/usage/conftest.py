"""Usage fixtures: users with tokens (operator, acme, globex), their API clients, two 4-GPU hosts.

The same fixtures as tests/api and tests/cli give (the usage report is read through the API, the
page and the command alike); placement is deterministic, so tests know where a request lands.
"""

import pytest

from api_people import (  # noqa: F401  (fixtures, shared with tests/api)
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
