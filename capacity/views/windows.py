"""Maintenance windows on the node and pool pages: see them; operators schedule and cancel them.

The section is drawn per request (one indexed read), never kept: a window scheduled or deleted
bumps its pool's booking version (capacity 0040), which renews the kept timeline and chart, and
the section itself reads the windows afresh. Schedule and cancel go through
capacity.services.maintenance as the API and the command do (audit, notices, moves included); the
views that answer the forms are the pages' own (views.nodes, views.pools).
"""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone

from capacity.access import is_operator, nodes_for, scope_for
from capacity.placement import CapacityError
from capacity.services import maintenance
from capacity.services.maintenance import Scheduled
from capacity.window_form import WindowForm

from .availability_chart import pool_charts

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
