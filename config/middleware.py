"""Refuse, before any view runs, request text that Postgres cannot store or compare; answer every
error under /api/ as JSON."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from urllib.parse import unquote_to_bytes

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from config import outage
from config.errors import CODES, INTERNAL, INVALID_INPUT


def _unstorable(text: str) -> bool:
    """Return whether text holds a NUL (Postgres text cannot) or a lone surrogate (not UTF-8)."""
    if "\x00" in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _utf8_query(query: str) -> bool:
    """Return whether a raw query string, percent-decoded, is UTF-8."""
    try:
        raw = query.encode("latin-1")  # WSGI hands the raw bytes over as latin-1
    except UnicodeEncodeError:
        raw = query.encode("utf-8")
    try:
        unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class RejectUnstorableInput:
    """Answer 400 to a path or query string with a NUL byte or invalid Unicode in it.

    Every filter and lookup downstream may then pass what it gets to the database: without this a
    `?q=%00` reached a query and answered 500. The API checks its own input (config.api.base),
    naming the parameter, and is left to it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not _utf8_query(request.META.get("QUERY_STRING", "")):
            # Django reads invalid UTF-8 as U+FFFD, so `?tenant=%ff%fe` would filter by "��".
            message = "the query string must be UTF-8 (percent-encoded)"
            if outage.is_api(request):
                return outage.api_error(INVALID_INPUT, message)
            return render(request, "400.html", {"message": message}, status=400)
        if request.path.startswith("/api/"):
            return self.get_response(request)
        where = None
        if _unstorable(request.path):
            where = "path"
        elif any(_unstorable(k) or any(_unstorable(v) for v in vs) for k, vs in request.GET.lists()):
            where = "query string"
        if where is None:
            return self.get_response(request)
        message = f"the {where} must not contain NUL characters or invalid Unicode"
        return render(request, "400.html", {"message": message}, status=400)


class ApiErrorsAreJson:
    """Answer every error under /api/ as JSON `{"code", "message"}`, whatever made it.

    The API's views answer their own errors; this is the net under them, outermost, for the answers
    Django makes itself: the debug page of an exception with DEBUG on, a 400 for a bad Host header,
    or any HTML error page a middleware or a plain view may give. A lost database stays a 503.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not outage.is_api(request) or response.status_code < 400 or _is_json(response):
            return response
        if outage.database_lost(getattr(request, "berth_exception", None)):
            return outage.unavailable(request)
        data = getattr(response, "data", None)  # a DRF answer rendered for a browser (the browsable API)
        if isinstance(data, dict) and data.keys() == {"code", "message"}:
            return JsonResponse(data, status=response.status_code, headers=_kept_headers(response))
        code = STATUS_CODES.get(
            response.status_code, INTERNAL if response.status_code >= 500 else INVALID_INPUT
        )
        answer = outage.api_error(code, _message(code, response))
        for header, value in _kept_headers(response).items():
            answer[header] = value
        return answer


def _kept_headers(response: HttpResponse) -> dict[str, str]:
    return {h: response[h] for h in ("Retry-After", "WWW-Authenticate", "Allow", "ETag") if h in response}


def _is_json(response: HttpResponse) -> bool:
    return response.get("Content-Type", "").split(";")[0].strip() == "application/json"


def _message(code: str, response: HttpResponse) -> str:
    if code == INTERNAL:
        return outage.INTERNAL_MESSAGE
    try:
        phrase = HTTPStatus(response.status_code).phrase.lower()
    except ValueError:
        phrase = f"HTTP {response.status_code}"
    return f"{phrase}: {CODES[code].meaning}"


# The first code of each status in config.errors' table (for 409, CONFLICT: only the status is known).
STATUS_CODES = {c.status: code for code, c in reversed(CODES.items())}
