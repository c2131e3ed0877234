"""Maintenance windows on the node and pool pages: see them; operators schedule and cancel them.

The section is drawn per request (one indexed read), never kept: a window scheduled or deleted
bumps its pool's booking version (capacity 0040), which renews the kept timeline and chart, and
the section itself reads the windows afresh. Schedule and cancel go through
capacity.services.maintenance as the API and the command do (audit, notices, moves included).
"""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from capacity.access import is_operator, nodes_for, scope_for
from capacity.placement import CapacityError
from capacity.services import maintenance
from capacity.services.maintenance import Scheduled
from capacity.window_form import WindowForm
from config.web import operator_required, page, wants_partial

from .availability_chart import pool_charts
from .common import visible_node, visible_pool

SHOWN = 50  # windows listed; the rest counted (the API lists them all)


def _rows(request: HttpRequest, *, pool=None, node=None, now: datetime) -> tuple[list[dict], int]:
    """Return the windows not over on the pool's nodes or the node, soonest first, as the section lists them."""
    found = maintenance.windows(pool=pool.slug if pool else None, node=node.name if node else None)
    found = found.filter(ends_at__gt=now).select_related("pool")
    scope = scope_for(request.user)
    visible = None
    if not scope.sees_every_tenant:
        visible = set(nodes_for(scope).values_list("name", flat=True))
        found = found.filter(window_nodes__node__name__in=visible).distinct()
    total = found.count()
    shown = list(found[:SHOWN])
    names = maintenance.node_names(shown)
    rows = []
    for w in shown:
        nodes = [n for n in names[w.pk] if visible is None or n in visible]
        rows.append(
            {
                "window": w,
                "nodes": nodes,
                "state": "running" if w.starts_at <= now else "scheduled",
                "whole_pool": bool(pool and w.pool_id == pool.pk),
            }
        )
    return rows, total


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
    rows, total = _rows(request, pool=pool, node=node, now=now)
    operator = is_operator(request.user)
    if pool is not None:
        action = reverse("pool-windows", args=[pool.slug])
    else:
        action = reverse("node-windows", args=[node.name])
    return {
        "windows": rows,
        "windows_more": max(0, total - len(rows)),
        "window_form": (form or WindowForm(pool_page=pool is not None)) if operator else None,
        "window_action": action,
        "window_result": result,
        "window_error": error,
        "window_target": "#node-page" if node is not None else "#maintenance-windows",
        "window_cancel": "node-window-delete" if node is not None else "pool-window-delete",
        "window_owner": node.name if node is not None else pool.slug,
    }


def _cancel(pk: int) -> str:
    """Cancel the window; return why not ("" when done)."""
    try:
        maintenance.cancel(pk)
    except CapacityError as err:
        return err.message
    return ""


def _pool_answer(request: HttpRequest, pool, status: int = 200, **drawn) -> HttpResponse:
    """Answer a pool page's window form: htmx gets the section with the chart out of band (the window
    is hatched there); a plain post a redirect when done, else the whole page with the errors."""
    done = drawn.get("result") is not None or not (drawn.get("form") or drawn.get("error"))
    if not wants_partial(request):
        if done:
            return redirect(reverse("pool-detail", args=[pool.slug]) + "#maintenance-windows")
        from .pools import pool_page  # the whole page, the errors next to their fields

        return pool_page(
            request, pool.slug, status=status, windows=window_section(request, pool=pool, **drawn)
        )
    scope = scope_for(request.user)
    context = {
        "pool": pool,
        **window_section(request, pool=pool, **drawn),
        "availability": pool_charts([pool], scope),
        "availability_tenant_view": not scope.sees_every_tenant,
        "chart_oob": True,
    }
    return page(request, "capacity/pool_detail.html", context, partial="windows")


@require_POST
@operator_required
def pool_windows(request: HttpRequest, slug: str) -> HttpResponse:
    """Schedule a window over the pool's nodes (or those named) from the pool page."""
    pool = visible_pool(request.user, slug)
    form = WindowForm(request.POST, pool_page=True)
    result = form.schedule(pool=pool.slug, by=request.user.get_username())
    if result is None:
        return _pool_answer(request, pool, 400, form=form)
    return _pool_answer(request, pool, result=result)


@require_POST
@operator_required
def pool_window_delete(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Cancel a window from the pool page (a running one ends now)."""
    pool = visible_pool(request.user, slug)
    error = _cancel(pk)
    return _pool_answer(request, pool, 404 if error else 200, error=error)


def _node_answer(request: HttpRequest, name: str, status: int = 200, **drawn) -> HttpResponse:
    """Answer a node page's window form: htmx gets the page below the navigation (the timeline
    changes too); a plain post a redirect when done, else the whole page with the errors."""
    done = drawn.get("result") is not None or not (drawn.get("form") or drawn.get("error"))
    if not wants_partial(request) and done:
        return redirect(reverse("node-detail", args=[name]) + "#maintenance-windows")
    from .nodes import _node_page_context

    node = visible_node(request.user, name)
    context = {**_node_page_context(request, node), **window_section(request, node=node, **drawn)}
    return page(
        request,
        "capacity/node_detail.html",
        context,
        partial="node-page",
        status=200 if wants_partial(request) else status,
    )


@require_POST
@operator_required
def node_windows(request: HttpRequest, name: str) -> HttpResponse:
    """Schedule a window over this node from its page."""
    node = visible_node(request.user, name)
    form = WindowForm(request.POST)
    result = form.schedule(node=node.name, by=request.user.get_username())
    if result is None:
        return _node_answer(request, node.name, 400, form=form)
    return _node_answer(request, node.name, result=result)


@require_POST
@operator_required
def node_window_delete(request: HttpRequest, name: str, pk: int) -> HttpResponse:
    """Cancel a window from the node page (a running one ends now, the node coming out of maintenance)."""
    node = visible_node(request.user, name)
    error = _cancel(pk)
    return _node_answer(request, node.name, 404 if error else 200, error=error)
