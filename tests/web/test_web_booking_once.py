"""A booking from the page is prepared once: one read of its tenant and pool serves the never-fits
check and the create, and what the page refuses is refused before anything is written."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from capacity.models import Reservation
from capacity.services import lookups

from web_helpers import HX, error_next_to

BASE = {"tenant": "acme", "pool": "lab-pool", "count": "1", "device_class": "gpu", "duration": "1d"}
LOOKUP = "SELECT u.id, u.slug"  # the statement that reads a request's tenant and pool


@pytest.fixture
def lab(make_node, tenant):
    for name in ("node-a", "node-b"):
        make_node(name, gpus=4)


def test_a_booking_reads_its_tenant_and_pool_once(op, lab):
    lookups.forget_all()
    with CaptureQueriesContext(connection) as statements:
        answer = op.post("/book/", BASE, **HX)
    assert answer.status_code == 200
    assert Reservation.objects.get().status == "placed"
    assert sum(LOOKUP in q["sql"] for q in statements.captured_queries) == 1


def test_a_booking_that_could_never_fit_is_refused_at_its_field_and_writes_nothing(op, lab):
    answer = op.post("/book/", {**BASE, "count": "5"}, **HX)
    assert answer.status_code == 200
    assert error_next_to(answer.text, "count") == "the largest node in lab-pool has 4 gpu"
    assert not Reservation.objects.exists()
