"""Answers to failures no view handled: a lost database is a 503 with Retry-After, never a 500, and
under /api/ every failure answers JSON `{"code", "message"}`, never a page or a traceback.

Django calls `server_error` (handler500) for any exception a view or a middleware let through,
inside the except block, so the exception is at hand. A lost connection (a restart, a failover, a
terminated backend) is not the request's fault and passes: the client is told to retry. Whatever
the request wrote rolled back with its transaction, or was committed whole before the connection
went; a retry with the same idempotency key answers the first outcome either way.

psycopg's own errors count as Django's do: the placer's pipelines and server-bound cursors talk to
psycopg directly in places, and a connection lost there raises psycopg.OperationalError, which
Django never wraps.
"""

from __future__ import annotations

import sys

import psycopg
from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError, connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views.csrf import csrf_failure as django_csrf_failure
from django.views.defaults import server_error as django_server_error

from config.errors import CODES, FORBIDDEN, INTERNAL, UNAVAILABLE

RETRY_AFTER_SECONDS = 2
MESSAGE = "the database could not be reached; retry in a moment"
# Only a create takes an idempotency key (a release or an action is safe to send again as it is).
CREATE_MESSAGE = f"{MESSAGE} (with the same idempotency key)"
CREATE_PATH = "/api/v1/reservations"
INTERNAL_MESSAGE = "something failed inside Berth; it is logged for the operators"
CSRF_MESSAGE = (
    "CSRF check failed ({reason}): send the API token as 'Authorization: Token <key>', "
    "or, signed in, the X-CSRFToken header"
)

# Django's and psycopg's: a server gone, a connection dropped or terminated, a pipeline aborted.
DATABASE_LOST = (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)


def is_api(request: HttpRequest) -> bool:
    """Return whether the request is for the REST API (its answers are JSON)."""
    return request.path.startswith("/api/")


def database_lost(exc: BaseException | None) -> bool:
    """Return whether an exception means the database went away (not the request's fault)."""
    return isinstance(exc, DATABASE_LOST)


def api_error(code: str, message: str) -> JsonResponse:
    """Return the API's JSON answer for an error code, with the code's status."""
    return JsonResponse({"code": code, "message": message}, status=CODES[code].status)


def server_error(request: HttpRequest) -> HttpResponse:
    """Answer an uncaught exception: 503 for a lost database; else JSON 500 on the API, the 500 page elsewhere."""
    exc = sys.exc_info()[1]
    if database_lost(exc):
        if isinstance(exc, psycopg.Error):
            forget_lost_connections()
        return unavailable(request)
    if is_api(request):
        return api_error(INTERNAL, INTERNAL_MESSAGE)
    return django_server_error(request)


def forget_lost_connections() -> None:
    """Have Django check its connections at the request's end, as after an error it wrapped itself,
    so a lost one is closed there, not kept for the thread's next request."""
    for conn in connections.all(initialized_only=True):
        conn.errors_occurred = True


def unavailable(request: HttpRequest) -> HttpResponse:
    """Return the 503 answer; it touches no database (no session, no user, no context processors)."""
    if is_api(request):
        creates = request.method == "POST" and request.path.rstrip("/") == CREATE_PATH
        response: HttpResponse = api_error(UNAVAILABLE, CREATE_MESSAGE if creates else MESSAGE)
    else:
        response = HttpResponse(render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Answer a refused CSRF check: JSON 403 on the API, the "Form expired" page elsewhere."""
    if is_api(request):
        return api_error(FORBIDDEN, CSRF_MESSAGE.format(reason=reason or "no token"))
    return django_csrf_failure(request, reason)


def remember_exception(sender, request: HttpRequest | None = None, **kwargs) -> None:
    """Keep the exception Django is about to answer on its request (config.middleware reads it)."""
    if request is not None:
        request.berth_exception = sys.exc_info()[1]


# Sent inside Django's except block, before its answer (handler500, or the debug page with DEBUG).
got_request_exception.connect(remember_exception, dispatch_uid="berth-remember-exception")
