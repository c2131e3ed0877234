"""CLI fixtures: deterministic placement and two 4-GPU hosts in lab-pool (see tests/conftest.py)."""

import pytest


@pytest.fixture(autouse=True)
def deterministic_placement(settings):
    """Pick the best node every time (TOP_N 1), so tests know where a request lands."""
    settings.CAPACITY = {**settings.CAPACITY, "SCHEDULER": {**settings.CAPACITY["SCHEDULER"], "TOP_N": 1}}


@pytest.fixture
def hosts(make_node, tenant, two_labelled_hosts):
    """node-a and node-b, four NVLinked GPUs each, with vcpu and memory and the capability label; acme."""
    return two_labelled_hosts


@pytest.fixture
def run():
    """Run a command through call_command; return its stdout."""
    from io import StringIO

    from django.core.management import call_command

    def call(*args, **kwargs):
        out = StringIO()
        call_command(*args, stdout=out, stderr=StringIO(), **kwargs)
        return out.getvalue()

    return call


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
        app = get_commands()[name]  # the app whose command it is (capacity's, maintenance's, ...)
        command = import_module(f"{app}.management.commands.{name}").Command(stdout=out, stderr=err)
        try:
            command.run_from_argv(["manage.py", name, *argv])
            code = 0
        except SystemExit as exc:
            code = exc.code
        return code, out.getvalue(), err.getvalue()

    return call
