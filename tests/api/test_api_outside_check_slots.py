"""Outside checks hold no more than their share of web threads (capacity/waits.py, Slots).

A tenant runs at most CHECKS_PER_TENANT outside checks at once in a process, and waits and checks
together hold at most half of its threads; past either a create answers at once 429 THROTTLED with
Retry-After, having written nothing, and the same key books once later. A real local check holds
each call until the test lets it answer. Transactional: the creates run on threads of their own.
"""

import threading
import time

import pytest
from django.db import connection
from test_api_outside_check import SECRET, Check

from capacity.models import Reservation
from capacity.waits import CHECKS_PER_TENANT, SLOTS
from inventory.models import Tenant
from policy.outside_check import BUSY_RETRY_AFTER

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def served_by_gunicorn(settings, monkeypatch):
    settings.WEB_THREADS = 16  # as gunicorn.conf.py says to a worker of 16 threads: a share of 8
    monkeypatch.setenv("BERTH_WEBHOOKS_ALLOW_PRIVATE", "1")  # the check listens on 127.0.0.1


@pytest.fixture
def gate():
    """A local check that answers 204 only once the test opens the gate (or after 1.5 s)."""
    made = Check()
    made.answer(204)
    opened = threading.Event()
    made.during = lambda: opened.wait(1.5)
    yield made, opened
    opened.set()
    made.server.shutdown()
    made.server.server_close()


@pytest.fixture
def checked(as_operator, lab, tenant, other_tenant, gate):
    check, opened = gate
    response = as_operator.put(
        "/api/v1/pools/lab-pool/policy",
        {"policyWebhook": check.url, "policyWebhookSecret": SECRET},
        format="json",
    )
    assert response.status_code == 200, response.json()
    return check, opened


class Create(threading.Thread):
    """One create in the background: its status, body and Retry-After."""

    def __init__(self, client, body):
        super().__init__()
        self.client, self.body = client, body
        self.start()

    def run(self):
        try:
            response = self.client.post("/api/v1/reservations", self.body, format="json")
            self.status, self.json = response.status_code, response.json()
        finally:
            connection.close()


def until_checks(count, timeout=5.0):
    deadline = time.monotonic() + timeout
    while SLOTS.total() < count:
        assert time.monotonic() < deadline, SLOTS.total()
        time.sleep(0.01)


def test_a_tenant_past_its_checks_gets_429_with_retry_after_and_nothing_written(as_acme, checked, ask):
    _check, opened = checked
    held = [Create(as_acme, ask(gpus=1, idempotencyKey=f"held-{i}")) for i in range(CHECKS_PER_TENANT)]
    until_checks(CHECKS_PER_TENANT)
    t0 = time.monotonic()
    refused = as_acme.post("/api/v1/reservations", ask(gpus=1, idempotencyKey="third"), format="json")
    assert time.monotonic() - t0 < 1.0  # at once, not after the check
    assert refused.status_code == 429
    assert refused["Retry-After"] == str(BUSY_RETRY_AFTER)
    assert refused.json() == {
        "code": "THROTTLED",
        "message": f"acme already has {CHECKS_PER_TENANT} bookings waiting on lab-pool's outside check "
        f"(policyWebhook); nothing was booked: retry in {BUSY_RETRY_AFTER} s",
    }
    assert not Reservation.objects.filter(idempotency_key="third").exists()
    opened.set()
    for create in held:
        create.join()
        assert create.status == 201, create.json
    assert SLOTS.total() == 0
    # The same key again books once, and a replay answers that booking.
    again = as_acme.post("/api/v1/reservations", ask(gpus=1, idempotencyKey="third"), format="json")
    replay = as_acme.post("/api/v1/reservations", ask(gpus=1, idempotencyKey="third"), format="json")
    assert (again.status_code, replay.status_code) == (201, 200)
    assert replay.json()["id"] == again.json()["id"]
    assert Reservation.objects.count() == CHECKS_PER_TENANT + 1


def test_another_tenant_is_not_refused_beside_a_tenant_at_its_bound(as_acme, as_globex, checked, ask):
    _check, opened = checked
    held = [Create(as_acme, ask(gpus=1)) for _ in range(CHECKS_PER_TENANT)]
    until_checks(CHECKS_PER_TENANT)
    other = Create(as_globex, ask(gpus=1, tenant="globex"))
    until_checks(CHECKS_PER_TENANT + 1)
    opened.set()
    for create in [*held, other]:
        create.join()
        assert create.status == 201, create.json
    assert Reservation.objects.filter(tenant__slug="globex").count() == 1


def test_a_check_gives_its_slot_back_when_it_answers_an_error_or_times_out(as_acme, checked, ask):
    check, opened = checked
    opened.set()
    check.answer(500, {"message": "boom"})
    assert as_acme.post("/api/v1/reservations", ask(gpus=1), format="json").status_code == 422
    assert SLOTS.total() == 0
    check.answer(204, delay=2.5)  # past the 2 s deadline
    assert as_acme.post("/api/v1/reservations", ask(gpus=1), format="json").status_code == 422
    assert SLOTS.total() == 0
    check.answer(204)
    assert as_acme.post("/api/v1/reservations", ask(gpus=1), format="json").status_code == 201
    assert Reservation.objects.count() == 1


def test_waits_and_checks_share_half_of_the_threads(as_acme, as_globex, checked, ask, settings):
    _check, opened = checked
    settings.WEB_THREADS = 4  # two may be held, waits and checks together
    with SLOTS.holding() as first_wait:
        assert first_wait
        held = Create(as_acme, ask(gpus=1))
        until_checks(2)
        with SLOTS.holding() as second_wait:
            assert not second_wait  # a check holds the other half
        refused = as_globex.post("/api/v1/reservations", ask(gpus=1, tenant="globex"), format="json")
    assert refused.status_code == 429 and refused["Retry-After"] == str(BUSY_RETRY_AFTER)
    assert refused.json()["message"].startswith("this server is answering as many outside checks and waits")
    opened.set()
    held.join()
    assert held.status == 201
    assert not Reservation.objects.filter(tenant__slug="globex").exists()


def test_a_process_that_serves_no_web_threads_runs_its_checks_unbounded(checked, settings):
    settings.WEB_THREADS = 0  # the worker, a management command, runserver
    acme = Tenant.objects.get(slug="acme")
    held = [SLOTS.checking(acme.pk) for _ in range(CHECKS_PER_TENANT + 1)]
    try:
        assert [slot.__enter__() for slot in held] == [None] * len(held)
    finally:
        for slot in held:
            slot.__exit__(None, None, None)
    assert SLOTS.total() == 0


def test_a_pool_past_its_own_cap_gets_429_before_its_tenants_bounds(
    as_operator, as_acme, as_globex, checked, ask
):
    """policyWebhookConcurrency (policy.check_cap): the pool's creates waiting on its check at once."""
    _check, opened = checked
    capped = as_operator.put("/api/v1/pools/lab-pool/policy", {"policyWebhookConcurrency": 1}, format="json")
    assert capped.status_code == 200 and capped.json()["policyWebhookConcurrency"] == 1
    held = Create(as_acme, ask(gpus=1))
    until_checks(1)
    refused = as_globex.post("/api/v1/reservations", ask(gpus=1, tenant="globex"), format="json")
    assert refused.status_code == 429 and refused["Retry-After"] == str(BUSY_RETRY_AFTER)
    assert refused.json()["message"] == (
        "lab-pool already has 1 bookings waiting on its outside check (policyWebhookConcurrency);"
        f" nothing was booked: retry in {BUSY_RETRY_AFTER} s"
    )
    opened.set()
    held.join()
    assert held.status == 201, held.json
    assert not Reservation.objects.filter(tenant__slug="globex").exists()
    # The slot is given back: the next create asks the check and books.
    assert (
        as_globex.post("/api/v1/reservations", ask(gpus=1, tenant="globex"), format="json").status_code == 201
    )
    for bad in (0, 1001, "2", True):
        answer = as_operator.put(
            "/api/v1/pools/lab-pool/policy", {"policyWebhookConcurrency": bad}, format="json"
        )
        assert answer.status_code == 400 and answer.json()["message"].startswith(
            "policyWebhookConcurrency must be"
        )
    off = as_operator.put("/api/v1/pools/lab-pool/policy", {"policyWebhookConcurrency": None}, format="json")
    assert off.json()["policyWebhookConcurrency"] is None
