"""The webhooks page: your subscriptions, their last deliveries, and what you can do with each."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from capacity.port import CapacityError, may_watch_nodes
from config.web import login_required, page

from . import services
from .calendar import calendar, feed_of
from .models import NODE_EVENTS, CalendarFeed, Subscription

PAGE_LOG = 10  # deliveries shown per subscription


@require_http_methods(["GET", "POST"])
@login_required
def webhooks(request: HttpRequest) -> HttpResponse:
    """List the user's webhooks; POST creates one, or acts on one (test, rotate, enable, delete)."""
    secret = error = None
    error_field = ""
    made_for = None
    form = {"url": "", "events": [], "description": ""}
    watches_nodes = may_watch_nodes(request.user)
    if request.method == "POST":
        action = request.POST.get("action", "")
        try:
            if action == "create":
                form = {
                    "url": request.POST.get("url", "").strip(),
                    "events": request.POST.getlist("events"),
                    "description": request.POST.get("description", "").strip(),
                }
                made = services.subscribe(request.user, form)
                secret, made_for = made.secret, made.pk
                form = {"url": "", "events": [], "description": ""}
            elif action == "rotate-calendar":
                feed_of(request.user, rotate=True)
                return redirect(f"{request.path}#calendar")
            elif action in ("test", "rotate", "enable", "delete"):
                hook_id = request.POST.get("webhook", "")
                if action == "test":
                    services.send_test(request.user, hook_id)
                    return redirect(f"{request.path}#webhook-{hook_id}")
                if action == "rotate":
                    secret, made_for = services.rotate_secret(request.user, hook_id).secret, int(hook_id)
                elif action == "enable":
                    services.enable(request.user, hook_id)
                else:
                    services.remove(request.user, hook_id)
                    return redirect(request.path)
        except CapacityError as exc:
            error = exc.message
            # "url: …", "events: …", "description: …": shown next to that field.
            error_field = error.split(":", 1)[0] if error.split(":", 1)[0] in form else "form"
    hooks = [
        {"hook": hook, "log": services.recent_deliveries(hook, limit=PAGE_LOG)}
        for hook in Subscription.objects.filter(owner=request.user).order_by("id")
    ]
    context = {
        "nav": "webhooks",
        "hooks": hooks,
        "secret": secret,
        "made_for": made_for,
        "error": error,
        "error_field": error_field,
        "form": form,
        "event_types": [
            t
            for t in services.SUBSCRIBABLE
            if t != "webhook.test" and (watches_nodes or t not in NODE_EVENTS)
        ],
        "calendar_url": request.build_absolute_uri(f"/calendar/{feed_of(request.user).token}.ics"),
    }
    return page(request, "webhooks/webhooks.html", context)


def calendar_feed(request: HttpRequest, token: str) -> HttpResponse:
    """Answer a secret calendar URL with its owner's bookings (no sign-in: the token is the key)."""
    feed = CalendarFeed.objects.select_related("owner").filter(token=token).first()
    if feed is None or not feed.owner.is_active:
        raise Http404("no such calendar")
    text = calendar(feed, request.build_absolute_uri("/").rstrip("/"))
    response = HttpResponse(text, content_type="text/calendar; charset=utf-8")
    response["Cache-Control"] = "private, max-age=300"
    return response
