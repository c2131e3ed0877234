"""The outside check over the API: a real local HTTP server answers the pool's policyWebhook."""

import json
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from standardwebhooks import Webhook

from capacity.models import Reservation

POLICY = "/api/v1/pools/lab-pool/policy"
SECRET = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY="  # 32 bytes


@pytest.fixture(autouse=True)
def site_idle_settings(settings, monkeypatch):
    settings.IDLE_AFTER, settings.IDLE_RELEASE_AFTER = timedelta(hours=2), None
    monkeypatch.setenv("BERTH_WEBHOOKS_ALLOW_PRIVATE", "1")  # the check listens on 127.0.0.1


class Check:
    """A local outside check: answers (status, body, delay) and keeps what it was sent."""

    def __init__(self) -> None:
        self.status, self.body, self.delay = 200, b"{}", 0.0
        self.seen: list[tuple[dict, bytes]] = []
        self.during = None  # called while a request is in (for the no-lock check)
        check = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers["Content-Length"])
                body = self.rfile.read(length)
                check.seen.append(({k.lower(): v for k, v in self.headers.items()}, body))
                if check.during is not None:
                    check.during()
                time.sleep(check.delay)
                try:
                    self.send_response(check.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(check.body)))
                    self.end_headers()
                    self.wfile.write(check.body)
                except OSError:
                    pass  # the caller gave up at its deadline

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/check"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, status: int, body: object = None, delay: float = 0.0) -> None:
        self.status, self.delay = status, delay
        self.body = body if isinstance(body, bytes) else json.dumps(body or {}).encode()


@pytest.fixture
def check():
    made = Check()
    yield made
    made.server.shutdown()
    made.server.server_close()


@pytest.fixture
def checked(as_operator, lab, tenant, check):
    """lab-pool asks the local check, signed with SECRET."""
    response = as_operator.put(
        POLICY, {"policyWebhook": check.url, "policyWebhookSecret": SECRET}, format="json"
    )
    assert response.status_code == 200, response.json()
    return check


def test_a_2xx_allows_and_the_call_is_signed_with_the_pools_secret(as_acme, checked, ask):
    response = as_acme.post("/api/v1/reservations", ask(gpus=1), format="json")
    assert response.status_code == 201, response.json()
    ((headers, body),) = checked.seen
    sent = Webhook(SECRET).verify(body, headers)  # raises when the signature is wrong
    assert sent["type"] == "reservation.create"
    assert sent["data"]["tenantId"] == "acme" and sent["data"]["poolId"] == "lab-pool"
    assert sent["data"]["request"]["devices"] == [{"class": "gpu", "count": 1}]
    assert headers["user-agent"] == "Berth-PolicyCheck/1"


def test_a_403_refuses_with_its_message_as_policy_limit_and_writes_nothing(as_acme, checked, ask):
    checked.answer(403, {"message": "grant G-12 has 40 GPU-hours left"})
    response = as_acme.post("/api/v1/reservations", ask(gpus=1), format="json")
    assert response.status_code == 422
    assert response.json() == {"code": "POLICY_LIMIT", "message": "grant G-12 has 40 GPU-hours left"}
    assert not Reservation.objects.exists()


def test_a_403_message_is_bounded_and_a_body_past_the_cap_is_not_read(as_acme, checked, ask):
    checked.answer(403, {"message": "x\x01" * 500})  # 3.5 kB: read whole; control characters go
    said = as_acme.post("/api/v1/reservations", ask(gpus=1), format="json").json()["message"]
    assert said == " ".join(["x"] * 500)[:300].rstrip() and len(said) <= 300
    checked.answer(403, {"message": "no", "pad": "y" * 10_000})
    said = as_acme.post("/api/v1/reservations", ask(gpus=1), format="json").json()["message"]
    assert said == "the pool's outside check (policyWebhook) refused this booking"
    checked.answer(403, {"message": 12})
    said = as_acme.post("/api/v1/reservations", ask(gpus=1), format="json").json()["message"]
    assert said == "the pool's outside check (policyWebhook) refused this booking"
    assert not Reservation.objects.exists()


def test_another_answer_follows_on_error_deny_by_default_then_allow(as_operator, as_acme, checked, ask):
    checked.answer(500, {"message": "boom"})
    response = as_acme.post("/api/v1/reservations", ask(gpus=1), format="json")
    assert response.status_code == 422
    assert response.json()["message"] == (
        "the pool's outside check (policyWebhook) answered 500; policyWebhookOnError is deny"
    )
    assert not Reservation.objects.exists()
    as_operator.put(POLICY, {"policyWebhookOnError": "allow"}, format="json")
    assert as_acme.post("/api/v1/reservations", ask(gpus=1), format="json").status_code == 201


def test_no_answer_within_2_seconds_follows_on_error(as_acme, checked, ask):
    checked.answer(200, {}, delay=4.0)
    started = time.monotonic()
    response = as_acme.post("/api/v1/reservations", ask(gpus=1), format="json")
    took = time.monotonic() - started
    assert response.status_code == 422, response.json()
    assert "no whole answer within the 2 s deadline" in response.json()["message"]
    assert took < 3.5, took


def test_the_secret_is_shown_only_by_the_put_that_made_it(as_operator, as_acme, lab, tenant, check):
    made = as_operator.put(POLICY, {"policyWebhook": check.url}, format="json").json()
    assert made["policyWebhookSecret"].startswith("whsec_")
    assert made["policyWebhookOnError"] == "deny"
    assert "policyWebhookSecret" not in as_operator.put(POLICY, {"maxDuration": "7d"}, format="json").json()
    read = as_acme.get(POLICY).json()
    host = check.url.removesuffix("/check")
    assert read["policyWebhook"] == f"{host}/…" and "policyWebhookSecret" not in read  # no path for tenants
    assert as_operator.get(POLICY).json()["policyWebhook"] == check.url
    bad = as_operator.put(POLICY, {"policyWebhookSecret": "whsec_short"}, format="json")
    assert bad.status_code == 400 and bad.json()["message"].startswith("policyWebhookSecret must be whsec_")


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("ftp://example.com/x", "policyWebhook: only http and https URLs"),
        ("http://169.254.169.254/latest", "policyWebhook: 169.254.169.254 is a cloud metadata address"),
        (12, "policyWebhook: an http or https URL"),
    ],
)
def test_the_url_is_checked_as_webhook_urls_are(as_operator, lab, url, said):
    response = as_operator.put(POLICY, {"policyWebhook": url}, format="json")
    assert response.status_code == 400
    assert response.json()["message"].startswith(said), response.json()
    bad = as_operator.put(POLICY, {"policyWebhookOnError": "maybe"}, format="json")
    assert bad.json()["message"] == "policyWebhookOnError must be allow or deny"


@pytest.mark.django_db(transaction=True)
def test_the_check_is_called_with_no_transaction_open(as_acme, checked, ask):
    from django.db import connection, connections

    main_pid = []
    states = []

    def look():
        # From the server's thread, on a connection of its own: what the creating backend is doing.
        with connections["default"].cursor() as cur:
            cur.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", main_pid)
            states.append(cur.fetchone()[0])
            cur.execute("SELECT count(*) FROM pg_locks WHERE pid = %s AND locktype <> 'virtualxid'", main_pid)
            states.append(cur.fetchone()[0])
        connections["default"].close()

    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        main_pid.append(cur.fetchone()[0])
    checked.during = look
    response = as_acme.post("/api/v1/reservations", ask(gpus=1), format="json")
    assert response.status_code == 201, response.json()
    assert states == ["idle", 0], states


def test_a_series_asks_the_check_once_with_its_repeat_and_a_403_books_nothing(as_acme, checked, ask):
    start = (datetime.now(UTC) + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    body = {**ask(gpus=1), "repeat": {"freq": "daily", "count": 3}}
    del body["duration"]
    body["during"] = {"start": start.isoformat(), "end": (start + timedelta(hours=1)).isoformat()}
    checked.answer(403, {"message": "teaching slots are booked by the registrar"})
    response = as_acme.post("/api/v1/reservations", body, format="json")
    assert response.status_code == 422
    assert response.json() == {
        "code": "POLICY_LIMIT",
        "message": "teaching slots are booked by the registrar",
    }
    assert not Reservation.objects.exists()
    checked.answer(200, {})
    response = as_acme.post("/api/v1/reservations", body, format="json")
    assert response.status_code == 201, response.json()
    assert [o["status"] for o in response.json()["series"]["occurrences"]] == ["placed"] * 3
    assert len(checked.seen) == 2  # once per series, not per occurrence
    sent = Webhook(SECRET).verify(checked.seen[-1][1], checked.seen[-1][0])
    assert sent["data"]["request"]["repeat"]["count"] == 3
