"""Taking nodes out of service on the pages: maintenance windows seen, scheduled and cancelled on
the node and pool pages, and a node drained from its page.

The windows section is a panel of capacity's pages (capacity.views.pool_sections, Panel, registered in
maintenance.apps), kept with the page's other fragments, under the pool's booking version: a window
scheduled or deleted bumps it (capacity 0040), which renews the section, the node's timeline and
the pool's chart at the commit; a window starting or ending ends the kept section's life then.
Schedule and cancel go through maintenance.windows as the API and the command do (audit, notices,
moves included), a drain through maintenance.drain; the views below answer the forms with
capacity's pages (the drain form and its result are in the node page's State panel).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from capacity.port import (
    CapacityError,
    DrainForm,
    MaintenanceWindowNode,
    Panel,
    is_operator,
    node_page,
    nodes_for,
    pool_charts,
    pool_page,
    scope_for,
    visible_node,
    visible_pool,
)
from config.web import operator_required, page, wants_partial
from inventory.models import Node

from . import windows as maintenance
from .drain import DrainResult, drain
from .forms import WindowForm
from .windows import Scheduled

# The panel's templates: a node's page draws the section, a pool's page the chart out of band too.
NODE_TEMPLATE, POOL_TEMPLATE = "maintenance/windows.html", "maintenance/pool_windows.html"

SHOWN = 50  # windows listed; past them the section says more follow (the API lists them all)


def _rows(request: HttpRequest, *, pool=None, node=None, now: datetime) -> tuple[list[dict], bool]:
    """Return the windows not over on the pool's nodes or the node, soonest first, as the section
    lists them (to a tenant, with the nodes of the pool it may read), and whether more follow: two
    statements (one when there are none)."""
    found = maintenance.windows(pool=pool.slug if pool else None, node=node.name if node else None)
    found = found.filter(ends_at__gt=now)
    scope = scope_for(request.user)
    # A tenant reads the nodes of this page's pool it may read (the page checked the pool).
    pool_id = pool.pk if pool is not None else node.pool_id
    readable = None
    if not scope.sees_every_tenant:
        readable = nodes_for(scope, Node.objects.filter(pool_id=pool_id), pools_checked=True)
    if readable is not None:
        found = found.filter(window_nodes__node__in=readable).distinct()
    shown = list(found[: SHOWN + 1])
    more, shown = len(shown) > SHOWN, shown[:SHOWN]
    names: dict[int, list[str]] = {w.pk: [] for w in shown}
    if shown:
        rows = MaintenanceWindowNode.objects.filter(window__in=shown)
        if readable is not None:
            rows = rows.filter(node__in=readable)
        for pk, name in rows.order_by("window_id", "node__name").values_list("window_id", "node__name"):
            names[pk].append(name)
    return [
        {
            "window": w,
            "nodes": names[w.pk],
            "state": "running" if w.starts_at <= now else "scheduled",
            "whole_pool": bool(pool and w.pool_id == pool.pk),
        }
        for w in shown
    ], more


def changes_at(context: dict) -> datetime | None:
    """Return when time alone changes the section: a listed window starting or ending."""
    moments = [m for row in context["windows"] for m in (row["window"].starts_at, row["window"].ends_at)]
    now = timezone.now()
    return min((m for m in moments if m > now), default=None)


def draw_windows(request: HttpRequest, **where) -> Callable[[str], tuple[str, datetime | None]]:
    """Return a kept fragment's draw of the windows section of a pool's page or a node's page.

    Kept under the pool's booking version, which a window scheduled or deleted bumps (capacity 0040).
    """
    template = POOL_TEMPLATE if where.get("pool") is not None else NODE_TEMPLATE

    def drawn(csrf_token: str) -> tuple[str, datetime | None]:
        context = {
            "is_operator": is_operator(request.user),
            "csrf_token": csrf_token,
            **window_section(request, **where),
        }
        return render_to_string(template, context, request), changes_at(context)

    return drawn


def section_html(request: HttpRequest, *, pool=None, node=None, **sent) -> str:
    """Return the windows section drawn now, with what a form sent back (a page drawn whole)."""
    context = {
        "is_operator": is_operator(request.user),
        **window_section(request, pool=pool, node=node, **sent),
    }
    return render_to_string(POOL_TEMPLATE if pool is not None else NODE_TEMPLATE, context, request)


PANEL = Panel("windows", draw_windows, section_html)


def window_section(
    request: HttpRequest,
    *,
    pool=None,
    node=None,
    form: WindowForm | None = None,
    result: Scheduled | None = None,
    error: str = "",
) -> dict:
    """Return what the windows partial draws for a pool's page or a node's page."""
    now = timezone.now()
    rows, more = _rows(request, pool=pool, node=node, now=now)
    operator = is_operator(request.user)
    if pool is not None:
        action = reverse("pool-windows", args=[pool.slug])
    else:
        action = reverse("node-windows", args=[node.name])
    return {
        "windows": rows,
        "windows_more": more,
        "window_form": (form or WindowForm(pool_page=pool is not None)) if operator else None,
        "window_action": action,
        "window_result": result,
        "window_error": error,
        "window_target": "#node-page" if node is not None else "#maintenance-windows",
        "window_cancel": "node-window-delete" if node is not None else "pool-window-delete",
        "window_owner": node.name if node is not None else pool.slug,
    }


def cancel_window(pk: int) -> str:
    """Cancel the window; return why not ("" when done)."""
    try:
        maintenance.cancel(pk)
    except CapacityError as err:
        return err.message
    return ""


def done(drawn: dict) -> bool:
    """Return whether a window form's answer is a success (a plain post then redirects)."""
    return drawn.get("result") is not None or not (drawn.get("form") or drawn.get("error"))


def pool_partial(request: HttpRequest, pool, **drawn) -> dict:
    """Return what the pool page's windows partial answers htmx: the section, and the chart out of
    band (a window is hatched there)."""
    scope = scope_for(request.user)
    return {
        "pool": pool,
        **window_section(request, pool=pool, **drawn),
        "availability": pool_charts([pool], scope),
        "availability_tenant_view": not scope.sees_every_tenant,
        "chart_oob": True,
    }


def _pool_answer(request: HttpRequest, pool, status: int = 200, **drawn) -> HttpResponse:
    """Answer the windows form: htmx gets the section (and the chart); a plain post a redirect when
    done, else the whole page with the errors next to their fields."""
    if wants_partial(request):
        return page(request, POOL_TEMPLATE, pool_partial(request, pool, **drawn))
    if done(drawn):
        return redirect(reverse("pool-detail", args=[pool.slug]) + "#maintenance-windows")
    return pool_page(request, pool.slug, status=status, panel_sent=(PANEL.name, drawn))


@require_POST
@operator_required
def pool_windows(request: HttpRequest, slug: str) -> HttpResponse:
    """Schedule a maintenance window over the pool's nodes (or those named) from the pool page."""
    pool = visible_pool(request.user, slug)
    form = WindowForm(request.POST, pool_page=True)
    result = form.schedule(pool=pool.slug, by=request.user.get_username())
    if result is None:
        return _pool_answer(request, pool, 400, form=form)
    return _pool_answer(request, pool, result=result)


@require_POST
@operator_required
def pool_window_delete(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Cancel a maintenance window from the pool page (a running one ends now)."""
    pool = visible_pool(request.user, slug)
    error = cancel_window(pk)
    return _pool_answer(request, pool, 404 if error else 200, error=error)


def _node_answer(request: HttpRequest, name: str, status: int = 200, **drawn) -> HttpResponse:
    """Answer the windows form: htmx gets the page below the navigation (the timeline changes too);
    a plain post a redirect when done, else the whole page with the errors next to their fields."""
    if not wants_partial(request) and done(drawn):
        return redirect(reverse("node-detail", args=[name]) + "#maintenance-windows")
    return node_page(request, name, status, panel_sent=(PANEL.name, drawn))


@require_POST
@operator_required
def node_windows(request: HttpRequest, name: str) -> HttpResponse:
    """Schedule a maintenance window over this node from its page."""
    node = visible_node(request.user, name)
    form = WindowForm(request.POST)
    result = form.schedule(node=node.name, by=request.user.get_username())
    if result is None:
        return _node_answer(request, node.name, 400, form=form)
    return _node_answer(request, node.name, result=result)


@require_POST
@operator_required
def node_window_delete(request: HttpRequest, name: str, pk: int) -> HttpResponse:
    """Cancel a maintenance window from the node page (a running one ends now, the node coming out)."""
    node = visible_node(request.user, name)
    error = cancel_window(pk)
    return _node_answer(request, node.name, 404 if error else 200, error=error)


def drained(form: DrainForm, node_name: str) -> DrainResult | None:
    """Drain the node with the form's reason; return the DrainResult, or None with the refusal next to
    its field."""
    if not form.is_valid():
        return None
    try:
        return drain(node_name, reason=form.cleaned_data["reason"])
    except CapacityError as err:
        form.add_error("reason" if err.message.startswith("reason ") else None, err.message)
        return None


@require_POST
@operator_required
def node_drain(request: HttpRequest, name: str) -> HttpResponse:
    """Drain a node from its page, and show what the drain did: moved, found no room, runs until when.

    The answer is the page with the result (htmx: all of it below the navigation, since the grid
    and the timeline change too), not a redirect: the result is read once. Posting again moves
    nothing twice: what had not started has already moved.
    """
    node = visible_node(request.user, name)
    form = DrainForm(request.POST, prefix="drain")
    result = drained(form, node.name)
    extra = {"drain_result": result, **({} if result is not None else {"drain_form": form})}
    return node_page(request, node.name, extra=extra)
