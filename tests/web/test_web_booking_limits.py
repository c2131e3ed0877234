"""The pool policy's limits from the browser: set on the pool page, and a booking past one is refused next to its field."""

from datetime import timedelta

import pytest

from capacity.models import Reservation
from policy.models import PoolPolicy
from policy.pool_policy import set_policy

from web_helpers import HX, error_next_to

BASE = {"tenant": "acme", "pool": "lab-pool", "count": "1", "device_class": "gpu", "duration": "1d"}


@pytest.fixture
def lab(make_node, tenant):
    for name in ("node-a", "node-b"):
        make_node(name, gpus=4)


def test_an_operator_sets_the_limits_on_the_pool_page(op, lab):
    data = {
        "policy-idleWarnAfter": "2h",
        "policy-allowKeepWhenIdle": "on",
        "policy-maxDuration": "7d",
        "policy-maxLeadTime": "30d",
        "policy-maxFutureGpuHours": "1000",
    }
    response = op.post("/pools/lab-pool/policy/", data, **HX)
    assert response.status_code == 200
    row = PoolPolicy.objects.get()
    assert (row.max_duration, row.max_lead_time, row.max_future_gpu_hours) == (
        timedelta(days=7),
        timedelta(days=30),
        1000,
    )
    bad = op.post("/pools/lab-pool/policy/", {**data, "policy-maxLeadTime": "soon"}, **HX).content.decode()
    assert "maxLeadTime must look like 30m" in bad
    assert PoolPolicy.objects.get().max_lead_time == timedelta(days=30)


@pytest.mark.parametrize(
    ("limit", "field", "value", "message"),
    [
        ({"max_duration": timedelta(days=7)}, "duration", "8d", "maxDuration is 7d; this asks 8d"),
        ({"max_future_gpu_hours": 20}, "count", "1", "maxFutureGpuHours is 20; acme would hold 24"),
    ],
)
def test_a_booking_past_a_limit_shows_it_next_to_its_field_and_books_nothing(
    op, lab, limit, field, value, message
):
    set_policy("lab-pool", limit)
    for headers in ({}, HX):
        html = op.post("/book/", {**BASE, field: value}, **headers).text
        assert message in error_next_to(html, field)
    assert not Reservation.objects.exists()


def test_a_start_past_max_lead_time_shows_next_to_the_start(op, lab):
    set_policy("lab-pool", {"max_lead_time": timedelta(days=30)})
    html = op.post("/book/", {**BASE, "start": "2099-01-02T10:00"}).text
    assert "maxLeadTime is 30d; this starts in" in error_next_to(html, "start")
    assert not Reservation.objects.exists()


def test_an_outside_check_refusal_shows_above_the_form_and_books_nothing(op, lab, monkeypatch):
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    monkeypatch.setenv("BERTH_WEBHOOKS_ALLOW_PRIVATE", "1")

    class Refuse(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"message": "grant G-12 is spent"}).encode()
            self.send_response(403)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        set_policy("lab-pool", {"policy_webhook": f"http://127.0.0.1:{server.server_address[1]}/check"})
        html = op.post("/book/", BASE).text
    finally:
        server.shutdown()
        server.server_close()
    assert "grant G-12 is spent" in html
    assert not Reservation.objects.exists()


def test_a_form_booking_past_the_tenants_outside_checks_says_when_to_retry_and_books_nothing(
    op, lab, settings, monkeypatch
):
    from capacity.waits import CHECKS_PER_TENANT, SLOTS
    from inventory.models import Tenant
    from policy.outside_check import BUSY_RETRY_AFTER

    settings.WEB_THREADS = 16  # served by gunicorn: checks are bounded
    monkeypatch.setenv("BERTH_WEBHOOKS_ALLOW_PRIVATE", "1")
    set_policy("lab-pool", {"policy_webhook": "http://127.0.0.1:9/check"})  # never asked: no slot
    acme = Tenant.objects.get(slug="acme")
    held = [SLOTS.checking(acme.pk) for _ in range(CHECKS_PER_TENANT)]
    try:
        assert [slot.__enter__() for slot in held] == [None] * CHECKS_PER_TENANT
        html = op.post("/book/", BASE).text
    finally:
        for slot in held:
            slot.__exit__(None, None, None)
    assert (
        f"acme already has {CHECKS_PER_TENANT} bookings waiting on lab-pool&#x27;s outside check "
        f"(policyWebhook); nothing was booked: retry in {BUSY_RETRY_AFTER} s"
    ) in html
    assert not Reservation.objects.exists()
