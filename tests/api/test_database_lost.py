"""A lost database answers 503 with Retry-After, never a 500: JSON on the API, Berth's page in the browser.

The outage is real: the connection is pointed at a port where nothing listens, as when the server
restarts or fails over, so every statement of the request fails to connect.
"""

from contextlib import contextmanager

import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from capacity.models import Reservation

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
