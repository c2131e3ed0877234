"""The one place that maps error codes to HTTP statuses, and the REST API's exception handler.

Every API error answers `{"code": "...", "message": "..."}`. The codes are the services' own
(INVALID_INPUT, NOT_FOUND, FORBIDDEN, CONFLICT, QUOTA_EXCEEDED, UNSUPPORTED) plus the few that only
HTTP has (UNAUTHENTICATED, METHOD_NOT_ALLOWED, ...).

Two choices worth knowing:

- QUOTA_EXCEEDED is 409: the request is allowed in principle but conflicts with what the tenant holds
  now; it succeeds once something is released. 403 would blur it with FORBIDDEN (who may do what).
- UNSUPPORTED is 422: the request is well formed and understood, but asks for something this server
  does not do (such as `binding: 'node'`). 501 would tell clients and proxies that the server failed
  and invite retries; a 5xx also reads as a server error to monitoring and to schemathesis.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response

from capacity.placement.errors import CapacityError
from inventory.errors import InventoryError
from inventory.filtersets import FilterError
from inventory.ingest import IngestError

INVALID_INPUT = "INVALID_INPUT"

STATUS: dict[str, int] = {
    "INVALID_INPUT": 400,
    "UNAUTHENTICATED": 401,
    "FORBIDDEN": 403,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "NOT_ACCEPTABLE": 406,
    "CONFLICT": 409,
    "QUOTA_EXCEEDED": 409,
    "PAYLOAD_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "UNSUPPORTED": 422,
    "THROTTLED": 429,
}

# DRF's exceptions, most specific first (AuthenticationFailed and NotAuthenticated share a code).
_DRF_CODES: tuple[tuple[type[drf.APIException], str], ...] = (
    (drf.ValidationError, "INVALID_INPUT"),
    (drf.ParseError, "INVALID_INPUT"),
    (drf.NotAuthenticated, "UNAUTHENTICATED"),
    (drf.AuthenticationFailed, "UNAUTHENTICATED"),
    (drf.PermissionDenied, "FORBIDDEN"),
    (drf.NotFound, "NOT_FOUND"),
    (drf.MethodNotAllowed, "METHOD_NOT_ALLOWED"),
    (drf.NotAcceptable, "NOT_ACCEPTABLE"),
    (drf.UnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE"),
    (drf.Throttled, "THROTTLED"),
)


def http_status(code: str) -> int:
    """Return the HTTP status for an error code; an unknown code is the caller's fault (400)."""
    return STATUS.get(code, 400)


def error_body(code: str, message: str) -> dict[str, str]:
    """Return the JSON body of an error."""
    return {"code": code, "message": message}


def flatten_detail(detail: Any, prefix: str = "") -> str:
    """Return DRF's nested error detail as one line: `field: message; other: message`."""
    if isinstance(detail, dict):
        parts = [flatten_detail(value, f"{prefix}{key}.") for key, value in detail.items()]
        return "; ".join(p for p in parts if p)
    if isinstance(detail, list):
        return "; ".join(flatten_detail(item, prefix) for item in detail)
    text = str(detail)
    field = prefix.rstrip(".")
    return f"{field}: {text}" if field and field != "non_field_errors" else text


def _drf(exc: drf.APIException) -> tuple[str, str, int]:
    code = next((c for cls, c in _DRF_CODES if isinstance(exc, cls)), None)
    if code is None:
        code = str(exc.default_code).upper()
    return code, flatten_detail(exc.detail), exc.status_code


def classify(exc: BaseException) -> tuple[str, str, int] | None:
    """Return (code, message, status) for an exception the API answers itself, else None."""
    if isinstance(exc, CapacityError | InventoryError):
        return exc.code, exc.message, http_status(exc.code)
    if isinstance(exc, IngestError):
        return exc.code, str(exc), http_status(exc.code)
    if isinstance(exc, FilterError):
        return INVALID_INPUT, exc.message, 400
    if isinstance(exc, drf.APIException):
        return _drf(exc)
    if isinstance(exc, Http404):
        return "NOT_FOUND", str(exc) or "not found", 404
    if isinstance(exc, DjangoPermissionDenied):
        return "FORBIDDEN", str(exc) or "you may not do this", 403
    if isinstance(exc, RequestDataTooBig):
        return "PAYLOAD_TOO_LARGE", "the request body is too large", 413
    return None


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Turn every error the API knows into `{"code", "message"}` with its status; others stay 500s."""
    found = classify(exc)
    if found is None:
        return None
    code, message, status = found
    headers: dict[str, str] = {}
    if isinstance(exc, drf.APIException):
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header
        if getattr(exc, "wait", None):
            headers["Retry-After"] = str(int(exc.wait))
    # A 401 without a WWW-Authenticate header is not allowed: DRF answers 403 then (session-only views).
    if status == 401 and "WWW-Authenticate" not in headers:
        status = 403
    return Response(error_body(code, message), status=status, headers=headers)
