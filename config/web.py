"""Shared helpers for the browser views: who the user is, what they may see, and htmx-aware rendering."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseClientRedirect

from config.access import is_operator


def _to_login(request: HttpRequest) -> HttpResponse:
    # An htmx request would swap the login page into a fragment; send the whole window there instead.
    if getattr(request, "htmx", False):
        return HttpResponseClientRedirect(f"{settings.LOGIN_URL}?next={request.get_full_path()}")
    return redirect_to_login(request.get_full_path())


def login_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Send anonymous users to the login page (the whole window, also from htmx)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return _to_login(request)
        return view(request, *args, **kwargs)

    return wrapper


def operator_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Let only operators through: anonymous users go to login, everyone else gets 403."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return _to_login(request)
        if not is_operator(request.user):
            raise PermissionDenied("Only operators may do this.")
        return view(request, *args, **kwargs)

    return wrapper


def wants_partial(request: HttpRequest) -> bool:
    """Return whether to answer with a fragment: an htmx request that is not a history restore."""
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.history_restore_request


def page(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    partial: str | None = None,
    status: int = 200,
) -> HttpResponse:
    """Render the full page, or for htmx its named partial; either way vary on HX-Request."""
    name = f"{template}#{partial}" if partial and wants_partial(request) else template
    context = {"is_operator": is_operator(request.user), **context}
    response = render(request, name, context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response


def safe_next(request: HttpRequest, fallback: str) -> str:
    """Return the `next` form value when it points into this site, else fallback."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback
