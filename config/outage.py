"""A lost database answers 503 with Retry-After, never a 500: JSON under /api/, Berth's page elsewhere.

Django calls `server_error` (handler500) for any exception a view or a middleware let through,
inside the except block, so the exception is at hand. A lost connection (a restart, a failover, a
terminated backend) is not the request's fault and passes: the client is told to retry. Whatever
the request wrote rolled back with its transaction, or was committed whole before the connection
went; a retry with the same idempotency key answers the first outcome either way.
"""

from __future__ import annotations

import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views.defaults import server_error as django_server_error

from config.errors import UNAVAILABLE

RETRY_AFTER_SECONDS = 2
MESSAGE = "the database could not be reached; retry in a moment (with the same idempotency key)"


def server_error(request: HttpRequest) -> HttpResponse:
    """Answer an uncaught exception: 503 for a lost database, Django's 500 page for anything else."""
    if isinstance(sys.exc_info()[1], OperationalError | InterfaceError):
        return unavailable(request)
    return django_server_error(request)


def unavailable(request: HttpRequest) -> HttpResponse:
    """Return the 503 answer; it touches no database (no session, no user, no context processors)."""
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"code": UNAVAILABLE, "message": MESSAGE}, status=503)
    else:
        response = HttpResponse(render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
