"""check_capacity on a live system: bookings committing while it reads are never reported as drift."""

import pytest

from capacity import services
from capacity.audit import audit

from booking import ask, config, from_real_now
from racing import run_threads
from tenants import make_tenant

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_audit_reads_one_snapshot_while_bookings_commit(pool, make_node):
    make_tenant("acme")
    for i in range(4):
        make_node(f"n{i}", gpus=8)
    found: list[list[str]] = []

    def work(i):
        if i == 0:
            for hour in range(60):
                made = services.reserve(ask(1, start=from_real_now(hour % 24), hours=1), config=config())
                if hour % 3 == 0:
                    services.release(made.reservation.pk)
        else:
            for _ in range(15):
                found.append(audit())

    assert run_threads(2, work) == []
    assert [lines for lines in found if lines] == []
    assert audit() == []
