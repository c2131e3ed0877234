"""Sign-in around Django's auth views: the address login limits count by, and password reset only with mail.

Included by config/urls.py ahead of django.contrib.auth.urls, so these routes win.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import path


def client_ip(request: HttpRequest) -> str | None:
    """Return the address a sign-in came from, as django-axes counts failures by it.

    Behind the TLS proxy (BERTH_TLS) every request comes from the proxy; the caller's address is the
    last one the proxy appended to X-Forwarded-For (earlier entries are whatever the client sent).
    """
    if settings.BERTH_TLS:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        if forwarded[-1]:
            return forwarded[-1]
    return request.META.get("REMOTE_ADDR")


def locked_out(request: HttpRequest, original_response: Any = None, credentials: Any = None) -> HttpResponse:
    """Answer a locked-out sign-in (django-axes) with the sign-in page's look, saying for how long."""
    username = (credentials or {}).get("username") or request.POST.get("username", "")
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    context = {"username": username, "minutes": minutes}
    return render(request, "registration/locked.html", context, status=429)


def needs_mail(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Answer 404 with a page saying to ask an operator unless a mail server is configured.

    Without a mail server, Django's reset view would dial localhost:25 on every POST.
    """

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not settings.MAIL_CONFIGURED:
            return render(request, "registration/password_reset_off.html", status=404)
        return view(request, *args, **kwargs)

    return wrapper


urlpatterns = [
    path("password_reset/", needs_mail(auth_views.PasswordResetView.as_view()), name="password_reset"),
    path(
        "password_reset/done/",
        needs_mail(auth_views.PasswordResetDoneView.as_view()),
        name="password_reset_done",
    ),
    path(
        "reset/<uidb64>/<token>/",
        needs_mail(auth_views.PasswordResetConfirmView.as_view()),
        name="password_reset_confirm",
    ),
    path(
        "reset/done/",
        needs_mail(auth_views.PasswordResetCompleteView.as_view()),
        name="password_reset_complete",
    ),
]
