"""The REST API's exception handler: every error answers `{"code": "...", "message": "..."}`.

Codes and their statuses are config.errors' (each code means one thing); DRF's own exceptions map
to the HTTP-only codes there (UNAUTHENTICATED, METHOD_NOT_ALLOWED, ...); an app's own exceptions
that are not BerthErrors map as the app registers them (`register_error`, from its
AppConfig.ready: config imports no app). Anything else is raised
on to Django, which logs it with its traceback; its handler (config.outage) answers a JSON 500
INTERNAL, or a 503 UNAVAILABLE for a lost database.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response

from config.errors import BerthError, http_status

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

# An app's exception class: how one reads as (code, message); its status is the code's.
_APP_ERRORS: dict[type[BaseException], Callable[[Any], tuple[str, str]]] = {}


def register_error(cls: type[BaseException], describe: Callable[[Any], tuple[str, str]]) -> None:
    """Answer an app's exception `cls` with the (code, message) `describe(exc)` returns."""
    _APP_ERRORS[cls] = describe


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
    if isinstance(exc, BerthError):
        return exc.code, exc.message, http_status(exc.code)
    for cls, describe in _APP_ERRORS.items():
        if isinstance(exc, cls):
            code, message = describe(exc)
            return code, message, http_status(code)
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
    """Turn every error the API knows into `{"code", "message"}` with its status; raise on the others."""
    found = classify(exc)
    if found is None:
        return None
    code, message, status = found
    headers: dict[str, str] = {}
    if isinstance(exc, BerthError) and exc.retry_after is not None:
        headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, drf.APIException):
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header
        if getattr(exc, "wait", None):
            headers["Retry-After"] = str(int(exc.wait))
    # A 401 without a WWW-Authenticate header is not allowed: DRF answers 403 then (session-only views).
    if status == 401 and "WWW-Authenticate" not in headers:
        status = 403
    return Response(error_body(code, message), status=status, headers=headers)
