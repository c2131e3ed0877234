"""Refuse, before any view runs, request text that Postgres cannot store or compare."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def _unstorable(text: str) -> bool:
    """Return whether text holds a NUL (Postgres text cannot) or a lone surrogate (not UTF-8)."""
    if "\x00" in text:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class RejectUnstorableInput:
    """Answer 400 to a path or query string with a NUL byte or invalid Unicode in it.

    Every filter and lookup downstream may then pass what it gets to the database: without this a
    `?q=%00` reached a query and answered 500. The API checks its own input (config.api.base),
    naming the parameter, and is left to it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
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
