"""The pools page and a pool's nodes, each with its GPU grid."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache

from django.core.paginator import Paginator
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from capacity import services
from capacity.access import scope_for
from capacity.rollups import BUCKETS, capacity_by_pool
from config.access import is_operator
from config.replica import replica_reads
from config.web import login_required, operator_required, page, safe_next, wants_partial
from inventory.filtersets import NodeFilterSet
from inventory.forms import ACTIONS, ROW_ACTIONS
from inventory.models import Node

from .availability_chart import pool_charts
from .common import (
    NODES_PER_PAGE,
    visible_node,
    visible_pool,
    visible_pools,
)
from .page_cache import NOT_KEPT, page_query, page_url, pool_fragment, pool_fragments
from .pool_sections import panels, section, sections
from .rows import CELL_TEXT, node_rows, split_common_labels

# What the nodes section reads of the query: its filters and page (others key and show nothing).
NODE_QUERY = ("page", *NodeFilterSet.base_filters)

# --- pools -----------------------------------------------------------------------------------------

SEGMENTS = ("allocated", "free", *BUCKETS)
SEGMENT_TEXT = {
    "allocated": "atoms booked now",
    "free": "on schedulable nodes and not booked",
    "excluded": "nodes that add no capacity to this pool",
    "maintenance": "nodes in maintenance",
    "cordoned": "cordoned nodes (not in maintenance): no new placements",
    "provisioning": "nodes still provisioning",
    "unreachable": "nodes not connected",
    "unhealthy": "NotReady, unhealthy or tainted nodes; unhealthy or unbookable devices",
}


@dataclass
class Segment:
    name: str
    count: int
    percent: float
    title: str


@dataclass
class ClassBar:
    """One device class of a pool: its counts now as a stacked bar, and what is booked later."""

    device_class: str
    total: int
    segments: list[Segment]
    later: int = 0


def class_bar(counts: dict) -> ClassBar:
    """Return a class's counts (capacity_by_pool) as bar segments; free is what no bucket and no booking holds now."""
    values = {name: counts[name] for name in SEGMENTS}
    # Bookings on a node in a bucket count twice; widths share the sum so they never overflow.
    width = max(1, sum(values.values()))
    segments = [
        Segment(name, values[name], round(100 * values[name] / width, 2), SEGMENT_TEXT[name])
        for name in SEGMENTS
    ]
    return ClassBar(counts["class"], counts["total"], segments, counts["bookedLater"])


@login_required
@replica_reads
def pools(request: HttpRequest) -> HttpResponse:
    """List the pools the user may see with their capacity at a glance."""
    pool_list = visible_pools(request.user)
    ids = [p.pk for p in pool_list]
    nodes = dict(Node.objects.filter(pool_id__in=ids).values_list("pool_id").annotate(n=Count("id")))
    bars = {
        pk: [class_bar(c) for c in classes]
        for pk, classes in capacity_by_pool(ids, timezone.now(), kept=True).items()
    }
    for bar_list in bars.values():
        # Whole GPUs first, then the MIG slice classes.
        bar_list.sort(key=lambda b: (b.device_class != "gpu", b.device_class))
    rows = [{"pool": p, "nodes": nodes.get(p.pk, 0), "bars": bars.get(p.pk, [])} for p in pool_list]
    return page(
        request,
        "capacity/pools.html",
        {"nav": "pools", "rows": rows, "legend": [(name, SEGMENT_TEXT[name]) for name in SEGMENTS]},
    )


@login_required
@replica_reads
def pool_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """Show a pool's shares and its nodes with their GPU grid, filtered and 50 to a page."""
    return pool_page(request, slug)


def pool_page(
    request: HttpRequest,
    slug: str,
    status: int = 200,
    sent: tuple[str, object, str] | None = None,
    panel_sent: tuple[str, dict] | None = None,
) -> HttpResponse:
    """Draw the pool page; `sent`: a settings section's (name, form, error) sent back with its errors;
    `panel_sent`: a panel's (name, what its form sent back: the maintenance windows' errors)."""
    pool = visible_pool(request.user, slug)
    scope = scope_for(request.user)
    queryset = services.nodes_for(
        scope,
        Node.objects.filter(pool=pool).select_related("owner_tenant", "pool"),
        pools_checked=True,  # visible_pool above
    ).order_by("name")
    context = {
        "nav": "pools",
        "pool": pool,
        # Of the parameters the nodes section reads alone: it is kept for them (page_cache).
        "next": page_url(request, NODE_QUERY),
        "cell_text": CELL_TEXT,
    }

    @cache
    def filters() -> NodeFilterSet:
        """The API's filters (NodeFilterSet), its form showing each error next to its field; built only to draw."""
        return NodeFilterSet(request.GET, queryset, viewer=scope)

    def draw_nodes(csrf_token: str) -> tuple[str, datetime | None]:
        filterset = filters()
        filter_error = filterset.first_error()
        nodes = queryset.none() if filter_error is not None else filterset.qs
        page_obj = Paginator(nodes, NODES_PER_PAGE).get_page(request.GET.get("page"))
        rows = node_rows(list(page_obj.object_list), pool, request.user, timezone.now())
        nodes_context = {
            **context,
            "is_operator": is_operator(request.user),
            "csrf_token": csrf_token,
            "form": filterset.form,  # its errors reach the fields out of band when htmx swaps the nodes alone
            "filter_error": filter_error,
            "rows": rows,
            "common_labels": split_common_labels(rows),
            "page_obj": page_obj,
            "query": page_query(request, NODE_QUERY, leave_out=("page",)),
        }
        html = render_to_string("capacity/pool_detail.html#nodes", nodes_context, request)
        if request.GET.get("free_gpus"):
            # Which nodes match changes when a booking on a node not drawn ends: not kept.
            return html, NOT_KEPT
        return html, min((r.changes_at for r in rows if r.changes_at is not None), default=None)

    def draw_chart(_csrf_token: str) -> tuple[str, datetime | None]:
        chart_context = {
            "availability": pool_charts([pool], scope),
            "availability_tenant_view": not scope.sees_every_tenant,
        }
        html = render_to_string("capacity/availability_chart.html", chart_context, request)
        # It starts "now", to the minute: drawn again when the minute it names has passed.
        now = timezone.now()
        return html, now.replace(second=0, microsecond=0) + timedelta(minutes=1)

    def draw_settings(csrf_token: str) -> tuple[str, datetime | None]:
        now = timezone.now()
        settings_context = {**context, "is_operator": is_operator(request.user), "csrf_token": csrf_token}
        for s in sections():
            form, error = sent[1:] if sent and sent[0] == s.name else (None, "")
            settings_context.update(s.context(request, pool, form, error, s.placeholder))
        html = "\n".join(
            render_to_string(f"capacity/pool_detail.html#{s.name}", settings_context, request)
            for s in sections()
        )
        # When time alone changes a section (what tenants hold as bookings start and end).
        changes = [s.changes_at(pool, now, settings_context) for s in sections() if s.changes_at]
        return html, min((c for c in changes if c is not None), default=None)

    def draw_filters(_csrf_token: str) -> tuple[str, datetime | None]:
        return render_to_string(
            "capacity/pool_detail.html#filters", {**context, "form": filters().form}, request
        ), None

    if wants_partial(request):
        # The nodes section alone (half of the page's time), kept until the pool's nodes or bookings change.
        response = HttpResponse(
            pool_fragment(request, "nodes", pool.pk, scope, draw_nodes, per_url=NODE_QUERY), status=status
        )
        patch_vary_headers(response, ["HX-Request"])
        return response
    # A form sent back with its errors, or a secret to show once, is this reader's own.
    own = sent is not None or any(s.own(request, pool) for s in sections() if s.own)
    draws = {
        "nodes": (draw_nodes, NODE_QUERY),
        "chart": (draw_chart, ()),
        "filters": (draw_filters, tuple(NodeFilterSet.base_filters)),
    }
    if not own:
        draws["settings"] = (draw_settings, False)
    for p in panels():
        if not panel_sent or panel_sent[0] != p.name:  # else sent back with its errors: this reader's own
            draws[p.name] = (p.draw(request, pool=pool), ())
    # One read of the cache for them all.
    html = pool_fragments(request, pool.pk, scope, draws)
    settings_html = html["settings"] if not own else draw_settings(get_token(request))[0]
    return page(
        request,
        "capacity/pool_detail.html",
        {
            **context,
            "nodes_html": mark_safe(html["nodes"]),
            "chart_html": mark_safe(html["chart"]),
            "settings_html": mark_safe(with_fresh_parts(request, pool, settings_html)),
            "filters_html": mark_safe(html["filters"]),
            # Kept, unless sent back with a form's errors.
            "panels_html": mark_safe(
                "".join(
                    p.html(request, pool=pool, **panel_sent[1])
                    if panel_sent and panel_sent[0] == p.name
                    else html[p.name]
                    for p in panels()
                )
            ),
        },
        status=status,
    )


def with_fresh_parts(request: HttpRequest, pool, html: str) -> str:
    """Put what each kept section reads per page (the Policy section's bookings kept when idle) in its placeholder.

    Keeping when idle writes the reservation alone, which the kept sections' key does not follow.
    """
    for s in sections():
        if s.placeholder and s.fresh and s.placeholder in html:
            html = html.replace(s.placeholder, s.fresh(request, pool))
    return html


@require_POST
@operator_required
def pool_section(request: HttpRequest, slug: str, name: str) -> HttpResponse:
    """Apply a settings section's form (Shares, Policy) from the pool page; htmx gets the section back in place."""
    s = section(name)
    if s is None:
        raise Http404(f"no pool page section {name}")
    pool = visible_pool(request.user, slug)
    form, error = s.apply(request, pool)
    if not wants_partial(request):
        if form is None:
            return redirect(reverse("pool-detail", args=[pool.slug]) + f"#{name}")
        return pool_page(request, slug, status=400, sent=(name, form, error))
    # htmx swaps nothing on a 4xx: the section with its errors comes back as a 200.
    return page(request, "capacity/pool_detail.html", s.context(request, pool, form, error, ""), partial=name)


@require_POST
@operator_required
def node_row_action(request: HttpRequest, name: str, action: str) -> HttpResponse:
    """Cordon or uncordon a node from the pool page; htmx gets the row back, others a redirect."""
    if action not in ROW_ACTIONS:
        raise Http404(f"no row action {action}")
    node = visible_node(request.user, name)
    form = ACTIONS[action](request.POST, prefix=action)
    form.apply(node)
    if not wants_partial(request):
        return redirect(safe_next(request, reverse("pool-detail", args=[node.pool.slug])))
    node = visible_node(request.user, name)
    row = node_rows([node], node.pool, request.user, timezone.now())[0]
    # The page shows labels every row shares once; the form echoes them so the row stays alike.
    common = sorted(tuple(item.partition("=")[::2]) for item in request.POST.getlist("common"))
    row.own_labels = [lb for lb in row.labels if (lb.key, lb.value) not in set(common)]
    return page(
        request,
        "capacity/pool_detail.html",
        {
            "pool": node.pool,
            "row": row,
            "row_errors": form.errors,
            "common_labels": common,
            "next": safe_next(request, ""),
        },
        partial="node-row",
    )
