"""Every answer of an error under /api/ is JSON `{"code", "message"}`: no CSRF page, no HTML 500, no
traceback, whatever raised it; pages outside /api/ keep their HTML."""

import io
import logging
import logging.config

import psycopg
import pytest
from django.db import connection
from django.test import Client
from django.urls import include, path
from rest_framework.test import APIClient

import config.urls
from capacity.models import Reservation

pytestmark = pytest.mark.django_db(transaction=True)


def a_bug(request):
    raise RuntimeError("a bug")


def a_plain_post(request):
    from django.http import HttpResponse

    return HttpResponse("written")


def commit_on_a_lost_connection(request):
    """Lose the backend, then commit in a pipeline on psycopg's own connection (as the placer does)."""
    with connection.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute("SELECT pg_backend_pid()")
        (pid,) = cur.fetchone()
    params = {k: v for k, v in connection.get_connection_params().items() if k != "context"}
    with psycopg.connect(**params, autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    raw = connection.connection
    with raw.pipeline() as pipeline:
        raw.execute("SELECT 1")
        pipeline.sync()  # psycopg's own OperationalError: Django never sees the statement


@pytest.fixture
def failing_urls(settings):
    """The site's URLs, plus a broken view and a plain (CSRF-checked) view under /api/ and outside it."""
    settings.ROOT_URLCONF = type(
        "urls",
        (),
        {
            "urlpatterns": [
                path("api/broken/", a_bug),
                path("api/plain/", a_plain_post),
                path("api/lost/", commit_on_a_lost_connection),
                path("broken/", a_bug),
                path("", include("config.urls")),
            ],
            "handler500": config.urls.handler500,
        },
    )


def token_client(user, **kw):
    client = APIClient(enforce_csrf_checks=True, **kw)
    client.credentials(HTTP_AUTHORIZATION=f"Token {user.auth_token.key}")
    return client


def test_a_post_to_an_unknown_api_path_with_a_token_is_a_json_404_not_the_csrf_page(acme):
    response = token_client(acme).post("/api/v1/nosuch", {"a": 1}, format="json")
    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "message": "no API endpoint /api/v1/nosuch"}


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_every_method_on_an_unknown_api_path_is_a_json_404(acme, method):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(acme)  # a session, and no CSRF token
    response = getattr(client, method)("/api/v1/nosuch")
    assert (response.status_code, response.json()["code"]) == (404, "NOT_FOUND")


def test_a_session_post_without_a_csrf_token_is_a_json_403(acme, lab, ask):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(acme)
    response = client.post("/api/v1/reservations", ask(1), format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "FORBIDDEN" and "CSRF" in response.json()["message"]
    assert not Reservation.objects.exists()


def test_a_refused_csrf_check_under_api_is_json_and_the_browser_keeps_its_page(acme, failing_urls):
    client = Client(enforce_csrf_checks=True)
    client.force_login(acme)
    response = client.post("/api/plain/", {"a": "1"})
    assert response.status_code == 403
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "FORBIDDEN"
    assert "X-CSRFToken" in response.json()["message"]
    page = client.post("/book/", {"a": "1"})
    assert page.status_code == 403 and "<h1>Form expired</h1>" in page.content.decode()


@pytest.mark.parametrize("debug", [False, True])
def test_an_unhandled_exception_under_api_is_a_json_500_without_a_traceback(failing_urls, settings, debug):
    settings.DEBUG = debug  # with DEBUG on Django would answer its debug page, a traceback
    response = Client(raise_request_exception=False).get("/api/broken/")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "code": "INTERNAL",
        "message": "something failed inside Berth; it is logged for the operators",
    }


def test_an_unhandled_exception_in_an_api_view_is_logged_with_its_traceback(failing_urls, caplog):
    Client(raise_request_exception=False).get("/api/broken/")
    (record,) = [r for r in caplog.records if r.name == "django.request" and r.exc_info]
    assert record.exc_info[0] is RuntimeError


def test_an_unhandled_exception_on_a_page_keeps_the_500_page(failing_urls):
    response = Client(raise_request_exception=False).get("/broken/")
    assert response.status_code == 500 and "Something went wrong" in response.content.decode()


def test_psycopgs_own_error_from_a_pipeline_on_a_lost_connection_is_a_json_503(failing_urls):
    response = Client(raise_request_exception=False).get("/api/lost/")
    connection.close()  # the test client keeps the request's connection: this test's own
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "2"
    assert response.json()["code"] == "UNAVAILABLE"


def test_a_bad_host_under_api_is_a_json_400():
    response = APIClient().get("/api/v1/pools", HTTP_HOST="evil.example")
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"


def test_an_error_asked_for_as_html_still_answers_json_with_its_message(as_acme, tenant):
    response = as_acme.get("/api/v1/reservations/999", HTTP_ACCEPT="text/html")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"code": "NOT_FOUND", "message": "no reservation 999"}


def test_a_post_to_the_api_index_is_a_json_405_naming_the_methods(acme):
    response = token_client(acme).post("/api/v1/", {}, format="json")
    assert response.status_code == 405
    assert response.json()["code"] == "METHOD_NOT_ALLOWED"
    assert response["Allow"] == "GET, HEAD"


def stderr_handler() -> logging.StreamHandler:
    """Return the stderr handler LOGGING configured on the root logger."""
    (handler,) = [h for h in logging.getLogger().handlers if h.get_name() == "stderr"]
    return handler


@pytest.fixture
def stderr_log():
    """The stderr handler LOGGING configured, writing into a buffer for the test."""
    handler = stderr_handler()
    buffer = io.StringIO()
    previous = handler.setStream(buffer)
    yield buffer
    handler.setStream(previous)


def test_with_debug_off_a_500_is_logged_to_stderr_with_its_traceback_request_id_method_and_path(
    failing_urls, settings, stderr_log
):
    settings.DEBUG = False
    response = Client(raise_request_exception=False).post("/api/broken/?x=1", HTTP_X_REQUEST_ID="req-42")
    assert response.status_code == 500 and response["X-Request-Id"] == "req-42"
    logged = stderr_log.getvalue()
    assert " ERROR django.request [req-42 POST /api/broken/] Internal Server Error: /api/broken/" in logged
    assert "Traceback (most recent call last)" in logged and "RuntimeError" in logged


def test_with_admins_and_a_mail_server_a_500_is_mailed_to_them(failing_urls, settings, mailoutbox):
    from config.logs import logging_config

    settings.DEBUG = False
    settings.ADMINS = ["ops@example.com"]
    stream = stderr_handler().stream
    logging.config.dictConfig(logging_config(mail_admins=True))
    try:
        stderr_handler().setStream(io.StringIO())
        Client(raise_request_exception=False).get("/broken/", HTTP_X_REQUEST_ID="req-43")
    finally:
        logging.config.dictConfig(logging_config(mail_admins=False))
        stderr_handler().setStream(stream)
    (mail,) = mailoutbox
    assert mail.to == ["ops@example.com"] and "Internal Server Error: /broken/" in mail.subject
