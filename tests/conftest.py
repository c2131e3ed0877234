"""Shared fixtures: small inventories built row by row, and the capacity audit after every db test."""

import sys

import pytest

from tenants import make_tenant

# Django and the models are imported inside fixtures, so tests/placement/ runs without Django too.


def pytest_configure(config):
    config.addinivalue_line("markers", "allow_drift: the test leaves capacity drift on purpose")


@pytest.fixture(autouse=True, scope="session")
def fast_password_hasher():
    """Hash test passwords with MD5: PBKDF2's million rounds cost ~0.3 s per user created."""
    import os

    if "DJANGO_SETTINGS_MODULE" not in os.environ:  # tests/placement may run without Django
        return
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True, scope="session")
def cache_of_this_run():
    """Give this run's cache keys a prefix of their own: a shared Redis may hold another run's.

    Keys hold pool versions from sequences that restart with each test database.
    """
    import os
    import time

    if "DJANGO_SETTINGS_MODULE" not in os.environ:
        return
    from django.core.cache import cache

    cache.key_prefix = f"berth-test-{os.getpid()}-{time.time_ns()}"


@pytest.fixture(autouse=True, scope="session")
def metrics_dir(tmp_path_factory):
    """Count this run's metrics in a directory of its own (worker processes it starts inherit it).

    /metrics sums every process's files in the directory: a shared one would mix in the counts of
    another test run or of a server started from this checkout.
    """
    import os

    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(tmp_path_factory.mktemp("metrics"))


@pytest.fixture(autouse=True)
def booking_version_at_once(request):
    """Bump pool booking versions at each statement in tests that never commit (the `db` fixture).

    The triggers (capacity migrations 0036 and 0037) fire at commit; a test inside one rolled-back transaction
    would otherwise read pages cached before its own bookings. Tests with `transaction_db` commit,
    and so check the timing production has.
    """
    if "db" not in request.fixturenames or "transactional_db" in request.fixturenames:
        return
    request.getfixturevalue("db")
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "SET CONSTRAINTS devicebooking_booking_version, scalarclaim_booking_version,"
            " devicebooking_booking_version_delete, scalarclaim_booking_version_delete,"
            " nodetaint_booking_version, reservation_reservation_version,"
            " reservation_reservation_version_update, maintenancewindownode_booking_version,"
            " allocation_booking_version, poolshare_booking_version, poolpolicy_booking_version IMMEDIATE"
        )
        # One transaction holds the whole test: bump again after each write, not once.
        cur.execute("SELECT set_config('berth.booking_version_every_row', 'on', true)")


@pytest.fixture(autouse=True)
def capacity_audit(request):
    """Run check_capacity's audit after every test that touched the database: it must find nothing."""
    used = [f for f in ("transactional_db", "db") if f in request.fixturenames]
    if not used or request.node.get_closest_marker("allow_drift"):
        yield
        return
    # Asking for the database fixture here makes it outlive this fixture's teardown.
    request.getfixturevalue(used[0])
    yield
    from django.db import connection

    from capacity.audit import audit

    if connection.needs_rollback:
        return
    assert audit() == [], "check_capacity found drift after this test"


@pytest.fixture(scope="module")
def module_rows(django_db_setup, django_db_blocker):
    """Hold one transaction open across a module: rows built in it once are seen by every test.

    Each test's `db` transaction nests inside as a savepoint, so what a test changes rolls back to the
    rows built here; this transaction rolls back when the module ends. Yields django_db_blocker: build
    the rows inside `with module_rows.unblock():`. Only for modules whose tests all use `db` (a
    transactional test would flush the tables inside it).
    """
    from django.db import transaction

    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
    try:
        yield django_db_blocker
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def site(db):
    from inventory.models import Site

    return Site.objects.create(slug="lab", name="Lab")


@pytest.fixture
def tenant(db):
    return make_tenant("acme", "Acme")


@pytest.fixture
def other_tenant(db):
    return make_tenant("globex", "Globex")


@pytest.fixture
def pool(site):
    from inventory.models import Pool

    return Pool.objects.create(slug="lab-pool", name="Lab pool", site=site)


@pytest.fixture
def make_node(pool):
    """Return a factory for hosts with `gpus` whole GPUs named `GPU-<node>-<i>`.

    Links: rank "NV" links every pair (a DGX-like board); None leaves links unknown. Scalars: vcpu
    and memoryGiB when given. Rollups are refreshed, as inventory ingestion would.
    """

    from capacity.rollups import refresh_rollups
    from inventory.models import Device, DeviceLink, Node, NodeResource

    def make(name="node-a", gpus=2, links="NV", vcpu=None, memory=None, **fields):
        node_pool = fields.pop("pool", pool)
        node = Node.objects.create(name=name, pool=node_pool, **fields)
        devices = Device.objects.bulk_create(
            Device(node=node, uuid=f"GPU-{name}-{i}", index=i, numa_node=i // 4) for i in range(gpus)
        )
        if links:
            DeviceLink.objects.bulk_create(
                DeviceLink(node=node, device_a=a, device_b=b, rank=links)
                for i, a in enumerate(devices)
                for b in devices[i + 1 :]
            )
        for resource, amount in (("vcpu", vcpu), ("memoryGiB", memory)):
            if amount is not None:
                NodeResource.objects.create(node=node, resource=resource, allocatable=amount)
        refresh_rollups([node_pool.pk])
        return node

    return make


@pytest.fixture
def two_labelled_hosts(make_node):
    """node-a and node-b in lab-pool: four NVLinked GPUs, vcpu 64, memoryGiB 512 and the capability
    label each (tests/api's `lab`, tests/cli's `hosts`)."""
    from inventory.models import NodeLabel

    nodes = [make_node(name, gpus=4, vcpu=64, memory=512) for name in ("node-a", "node-b")]
    for node in nodes:
        NodeLabel.objects.create(
            node=node, key="bc.dev/cap.devices.limits", value="true", source=NodeLabel.Source.SYSTEM
        )
    return nodes


@pytest.fixture(autouse=True)
def stop_the_wait_listener():
    """Close the placer-notification listener's connection after a test that waited.

    Its connection would otherwise keep the test database open when pytest drops it.
    """
    yield
    waits = sys.modules.get("capacity.waits")
    if waits is not None:
        waits.HUB.stop()
