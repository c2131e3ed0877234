"""A lost database answers 503 with Retry-After, never a 500: JSON on the API, Berth's page in the browser.

The outage is real: the connection is pointed at a port where nothing listens, as when the server
restarts or fails over, so every statement of the request fails to connect.
"""

import threading
import time
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from capacity.models import Reservation
from capacity.placers.commit import COMMIT

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def database_unreachable():
    """Make every new connection fail as a server that went away; put the settings back after."""
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update(HOST="127.0.0.1", PORT="1")  # nothing listens on port 1
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


def test_an_api_call_without_a_database_is_a_json_503_with_retry_after(acme, lab, ask):
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Token {acme.auth_token.key}")
    with database_unreachable():
        response = client.post("/api/v1/reservations", ask(1, idempotencyKey="job-1"), format="json")
    assert response.status_code == 503
    assert response["Retry-After"] == "2"
    assert response.json() == {
        "code": "UNAVAILABLE",
        "message": "the database could not be reached; retry in a moment (with the same idempotency key)",
    }
    assert not Reservation.objects.exists()
    # The client's retry with its key books once, and a second retry answers that booking.
    first = client.post("/api/v1/reservations", ask(1, idempotencyKey="job-1"), format="json")
    again = client.post("/api/v1/reservations", ask(1, idempotencyKey="job-1"), format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"] and Reservation.objects.count() == 1


def test_a_release_without_a_database_is_a_503_that_names_no_idempotency_key(acme, lab, ask):
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Token {acme.auth_token.key}")
    booked = client.post("/api/v1/reservations", ask(1), format="json").json()
    with database_unreachable():
        response = client.post(f"/api/v1/reservations/{booked['id']}/release")
    assert response.status_code == 503 and response["Retry-After"] == "2"
    assert response.json() == {
        "code": "UNAVAILABLE",
        "message": "the database could not be reached; retry in a moment",
    }
    assert client.post(f"/api/v1/reservations/{booked['id']}/release").json()["status"] == "released"


def test_a_page_without_a_database_is_berths_503_page(acme, lab):
    client = Client(raise_request_exception=False)
    client.force_login(acme)
    with database_unreachable():
        response = client.get("/reservations/")
    assert response.status_code == 503
    assert response["Retry-After"] == "2"
    html = response.content.decode()
    assert "<title>Back in a moment · Berth</title>" in html
    assert "Berth lost its database for a moment" in html
    assert client.get("/reservations/").status_code == 200


def test_other_server_errors_still_answer_the_500_page(acme, lab, settings):
    """Only a lost database is a 503: a bug stays a 500, so it is seen."""
    from django.urls import path

    def broken(request):
        raise RuntimeError("a bug")

    import config.urls

    settings.ROOT_URLCONF = type(
        "urls", (), {"urlpatterns": [path("broken/", broken)], "handler500": config.urls.handler500}
    )
    response = Client(raise_request_exception=False).get("/broken/")
    assert response.status_code == 500
    assert "Something went wrong" in response.content.decode()


def waiting_backend(fragment: str, timeout: float = 20.0) -> int:
    """Return the pid of another backend waiting on a lock in a statement holding `fragment`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cur:
            cur.execute(
                """SELECT pid FROM pg_stat_activity
                    WHERE wait_event_type = 'Lock' AND datname = current_database()
                      AND pid <> pg_backend_pid() AND query LIKE %s""",
                [f"%{fragment}%"],
            )
            row = cur.fetchone()
        if row:
            return row[0]
        time.sleep(0.02)
    raise AssertionError(f"no backend waited on a lock in a statement with {fragment!r}")


def test_a_connection_terminated_mid_commit_answers_a_json_503_and_the_retry_books_once(acme, lab, ask):
    """The booking's commit (the placer's pipeline, psycopg's own cursors) waits on the pool row a
    second connection holds; its backend is terminated there. psycopg's OperationalError, which
    Django never wraps, answers 503 as Django's does; the retry with the same key books once."""
    blocker = psycopg.connect(
        **{k: v for k, v in connection.get_connection_params().items() if k != "context"}
    )
    blocker.execute("SELECT 1 FROM inventory_pool WHERE slug = 'lab-pool' FOR UPDATE")
    client = APIClient(raise_request_exception=False)
    client.credentials(HTTP_AUTHORIZATION=f"Token {acme.auth_token.key}")
    answers = []

    def book():
        answers.append(client.post("/api/v1/reservations", ask(1, idempotencyKey="job-7"), format="json"))
        connection.close()

    booking = threading.Thread(target=book)
    booking.start()
    try:
        # The commit's call (capacity/placers/commit.py: its lock comes first), nothing before it.
        pid = waiting_backend(COMMIT.name)
        with connection.cursor() as cur:
            cur.execute("SELECT pg_terminate_backend(%s)", [pid])
        booking.join(20)
    finally:
        blocker.rollback()
        blocker.close()
    (response,) = answers
    assert response.status_code == 503, response.content
    assert response["Content-Type"] == "application/json"
    assert response["Retry-After"] == "2"
    assert response.json()["code"] == "UNAVAILABLE"
    retry = client.post("/api/v1/reservations", ask(1, idempotencyKey="job-7"), format="json")
    again = client.post("/api/v1/reservations", ask(1, idempotencyKey="job-7"), format="json")
    assert retry.status_code in (200, 201) and again.status_code == 200
    assert Reservation.objects.filter(idempotency_key="job-7").count() == 1
