"""Browser pages: pools and their nodes with what is booked on them, previews, bookings, reservations.

Pages that show inventory together with its bookings live here, not in inventory: capacity may read
inventory, inventory never reads capacity. Every view checks the user's role on the server.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.core.paginator import Paginator
from django.db.models import Count, Prefetch, prefetch_related_objects
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from capacity.access import scope_for
from config.web import login_required, operator_required, page, safe_next, wants_partial
from inventory.filtersets import FilterError, filter_nodes
from inventory.forms import ACTIONS, PANEL_FORMS, ROW_ACTIONS, NodeFilterForm, panel_forms
from inventory.models import Device, DeviceLink, Node, NodeLabel, Pool, Tenant

from . import services
from .forms import BookForm, RequestForm, ReservationFilterForm, SelectorForm
from .models import DeviceBooking, PoolCapacityRollup, Reservation
from .placement import (
    NOT_FOUND,
    CapacityError,
    NodeView,
    format_selector,
    may_be_schedulable,
    parse_selector,
    scalar_capacity,
)
from .placement import Pool as PoolView
from .placement.reasons import rejection_label
from .rollups import BUCKETS

NODES_PER_PAGE = 50
RESERVATIONS_PER_PAGE = 50
GRID_AHEAD = timedelta(days=7)
TIMELINE_BEHIND = timedelta(days=2)
TIMELINE_AHEAD = timedelta(days=7)
TIME_FORMAT = "%b %d %H:%M"


# --- who may see what ------------------------------------------------------------------------------


def visible_pools(user) -> list[Pool]:
    """Return the pools the user may read: all for operators, else those its tenants may book."""
    return list(services.pools_for(scope_for(user)))


def visible_pool(user, slug: str) -> Pool:
    """Return the pool with this slug if the user may read it, else raise 404."""
    for pool in visible_pools(user):
        if pool.slug == slug:
            return pool
    raise Http404(f"no pool {slug}")


def visible_tenants(user) -> list[Tenant]:
    """Return the tenants the user may book or preview for."""
    scope = scope_for(user)
    tenants = Tenant.objects.order_by("slug")
    return list(tenants if scope.tenants is None else tenants.filter(slug__in=scope.tenants))


def visible_node(user, name: str) -> Node:
    """Return the node if the user may read its pool, else raise 404."""
    node = get_object_or_404(Node.objects.select_related("pool", "owner_tenant"), name=name)
    # The visible pool comes with its site and owner loaded, which the rows read.
    node.pool = visible_pool(user, node.pool.slug)
    return node


# --- bookings as the pages draw them ---------------------------------------------------------------


@dataclass
class Booking:
    """One device booking, with the owner text this viewer may see."""

    device_id: int
    start: datetime
    end: datetime
    owner: str
    mine: bool
    short: str = ""

    @property
    def text(self) -> str:
        return f"{self.owner}: {self.start:{TIME_FORMAT}} – {self.end:{TIME_FORMAT}} UTC"


def bookings_by_device(
    device_ids: list[int], start: datetime, end: datetime, user
) -> dict[int, list[Booking]]:
    """Return the bookings of these devices that overlap [start, end), in one query.

    Tenants see who holds a booking only when it is their own tenant's.
    """
    scope = scope_for(user)
    rows = (
        DeviceBooking.objects.filter(device_id__in=device_ids, during__overlap=(start, end))
        .values_list(
            "device_id",
            "during",
            "allocation__reservation_id",
            "allocation__reservation__tenant__slug",
            "allocation__instance_id",
        )
        .order_by("device_id", "during")
    )
    out: dict[int, list[Booking]] = defaultdict(list)
    for device_id, during, reservation_id, tenant, instance in rows:
        mine = reservation_id is not None and (scope.tenants is None or tenant in scope.tenants)
        if mine:
            owner, short = f"reservation {reservation_id} ({tenant})", f"#{reservation_id} {tenant}"
        elif scope.tenants is None:
            owner, short = f"instance {instance}", f"instance {instance}"
        else:
            owner, short = "booked by another tenant", "booked"
        out[device_id].append(Booking(device_id, during.lower, during.upper, owner, mine, short))
    return out


def device_label(device: Device, parent: Device | None = None) -> str:
    """Return how the pages name a device: GPU3, or GPU0 mig-1g.10gb #2 for a slice."""
    if parent is not None:
        return f"{device_label(parent)} {device.device_class} #{device.index}"
    prefix = "GPU" if device.device_class == "gpu" else device.device_class
    return f"{prefix}{device.index}"


# --- the pool page: one row per node with its GPU grid ----------------------------------------------

CELL_TEXT = {
    "free": "free",
    "now": "booked now",
    "later": "booked later this week",
    "unhealthy": "unhealthy",
    "unbookable": "unbookable",
}


@dataclass
class Cell:
    """One atom in the GPU grid; a partitioned GPU holds its MIG slices."""

    label: str
    state: str
    title: str
    slices: list[Cell] = field(default_factory=list)


@dataclass
class Badge:
    """A state the node is in, as text (never colour alone); kind picks the style."""

    text: str
    kind: str
    title: str = ""


@dataclass
class Scalar:
    name: str
    free: int
    total: int


@dataclass
class NodeRow:
    """A node as the pool page and the node page draw it."""

    node: Node
    cells: list[Cell]
    badges: list[Badge]
    labels: list[NodeLabel]
    system_labels: list[NodeLabel]
    scalars: list[Scalar]
    schedulable: bool
    free_gpus: int
    total_gpus: int
    actions: list[str] = field(default_factory=list)
    own_labels: list[NodeLabel] | None = None  # the labels not shared by every row of the page

    @property
    def scalar_map(self) -> dict[str, Scalar]:
        return {s.name: s for s in self.scalars}

    @property
    def system_labels_text(self) -> str:
        return "\n".join(f"{label.key}={label.value}" for label in self.system_labels)

    @property
    def labels_text(self) -> str:
        return "\n".join(f"{label.key}={label.value}" for label in self.labels)


def split_common_labels(rows: list[NodeRow]) -> list[tuple[str, str]]:
    """Return the operator labels every row shares, and leave each row only its own.

    Operators scan for what differs; labels every node of the page carries are shown once.
    """
    if len(rows) < 2:
        for row in rows:
            row.own_labels = row.labels
        return []
    common = set.intersection(*({(lb.key, lb.value) for lb in row.labels} for row in rows))
    for row in rows:
        row.own_labels = [lb for lb in row.labels if (lb.key, lb.value) not in common]
    return sorted(common)


def _cell_state(device: Device, bookings: list[Booking], now: datetime) -> str:
    if not device.healthy:
        return "unhealthy"
    if not device.bookable:
        return "unbookable"
    if any(b.start <= now < b.end for b in bookings):
        return "now"
    return "later" if bookings else "free"


def _cell(device: Device, bookings: dict[int, list[Booking]], now: datetime, parent: Device | None = None):
    own = bookings.get(device.pk, [])
    state = _cell_state(device, own, now)
    label = device_label(device, parent)
    lines = [f"{label} · {CELL_TEXT[state]}", device.uuid, *(b.text for b in own)]
    return Cell(label=str(device.index), state=state, title="\n".join(lines))


def _badges(node: Node, pool: Pool) -> list[Badge]:
    badges = []
    if node.role != Node.Role.HOST:
        badges.append(Badge(f"role {node.role}", "muted", "not a host: adds no capacity"))
    if node.trust == Node.Trust.TENANT_CONTROLLED:
        badges.append(Badge("tenant-controlled", "muted", "tenant-controlled nodes add no capacity"))
    if node.owner_tenant_id is not None and node.owner_tenant_id != pool.owner_tenant_id:
        badges.append(
            Badge(
                f"✕ excluded: owned by {node.owner_tenant.slug}",
                "muted",
                "tenant-owned node outside its owner's pool",
            )
        )
    elif node.owner_tenant_id is not None:
        badges.append(
            Badge(f"owned by {node.owner_tenant.slug}", "info", "tenant-owned node in its owner's pool")
        )
    if node.maintenance:
        badges.append(Badge("⚙ maintenance", "warn", "in maintenance"))
    if node.cordoned:
        badges.append(Badge("⊘ cordoned", "warn", "no new placements"))
    if node.provision_state != Node.ProvisionState.ACTIVE:
        text = (
            "provisioning"
            if node.provision_state == Node.ProvisionState.PROVISIONING
            else node.provision_state
        )
        badges.append(Badge(f"◌ {text}", "muted", f"provision state {node.provision_state}"))
    elif not node.converged:
        badges.append(Badge("◌ provisioning: awaiting spec", "muted", "awaiting its first converged spec"))
    if node.connectivity != Node.Connectivity.CONNECTED:
        badges.append(Badge(f"✕ unreachable: {node.connectivity}", "bad", "connectivity"))
    taint_reasons = set()
    for taint in node.taints.all():
        reason = f"{taint.key}={taint.value}" if taint.value else taint.key
        taint_reasons.add(reason)
        if taint.key == "dedicated":
            badges.append(Badge(f"⚑ dedicated to {taint.value}", "info", f"taint {taint}"))
        else:
            badges.append(Badge(f"▲ tainted {taint}", "warn", "taint"))
    others = [r for r in node.no_schedule_reasons if r not in taint_reasons]
    if others:
        badges.append(Badge(f"✕ NoSchedule: {', '.join(others)}", "bad", "from node conditions"))
    return badges


def _node_view(node: Node, pool: Pool) -> tuple[NodeView, PoolView]:
    # The placement core's own check decides "schedulable", so the page and the placer agree.
    view = NodeView(
        id=node.name,
        pool_id=pool.slug,
        owner_tenant_id=node.owner_tenant.slug if node.owner_tenant_id else None,
        role=node.role,
        provision_state=node.provision_state,
        connectivity=node.connectivity,
        trust=node.trust,
        maintenance=node.maintenance,
        cordoned=node.cordoned,
        converged=node.converged,
        no_schedule_reasons=tuple(node.no_schedule_reasons),
    )
    owner = pool.owner_tenant.slug if pool.owner_tenant_id else None
    return view, PoolView(id=pool.slug, archived=pool.archived, owner_tenant_id=owner)


def node_rows(nodes: list[Node], pool: Pool, user, now: datetime) -> list[NodeRow]:
    """Build the rows of these nodes in five queries whatever their number.

    Devices, labels, taints and resources are prefetched; one query reads the bookings of all their
    devices within the grid's window (now to a week ahead).
    """
    prefetch_related_objects(
        nodes,
        Prefetch("devices", queryset=Device.objects.order_by("index", "uuid")),
        "labels",
        "taints",
        "resources",
    )
    device_ids = [d.pk for n in nodes for d in n.devices.all()]
    bookings = bookings_by_device(device_ids, now, now + GRID_AHEAD, user)
    rows = []
    for node in nodes:
        devices = list(node.devices.all())
        by_pk = {d.pk: d for d in devices}
        cells: dict[int, Cell] = {}
        # Whole devices first, so that every slice finds its parent's cell.
        for device in sorted(devices, key=lambda d: d.parent_id is not None):
            parent = by_pk.get(device.parent_id) if device.parent_id else None
            cell = _cell(device, bookings, now, parent)
            if parent is not None and parent.pk in cells:
                cells[parent.pk].slices.append(cell)
            else:
                cells[device.pk] = cell
        gpus = [cells[d.pk] for d in devices if d.parent_id is None and d.device_class == "gpu"]
        labels = list(node.labels.all())
        view, pool_view = _node_view(node, pool)
        rows.append(
            NodeRow(
                node=node,
                cells=list(cells.values()),
                badges=_badges(node, pool),
                labels=[label for label in labels if label.source != NodeLabel.Source.SYSTEM],
                system_labels=[label for label in labels if label.source == NodeLabel.Source.SYSTEM],
                scalars=[
                    Scalar(
                        r.resource,
                        scalar_capacity(r.allocatable, r.ratio) - r.allocated,
                        scalar_capacity(r.allocatable, r.ratio),
                    )
                    for r in node.resources.all()
                ],
                schedulable=may_be_schedulable(view, pool_view),
                free_gpus=sum(1 for c in gpus if _free_now(c)),
                total_gpus=len(gpus),
                actions=["uncordon" if node.cordoned else "cordon"],
            )
        )
    return rows


def _free_now(cell: Cell) -> bool:
    """Return whether a GPU is free now (as the free_gpus filter counts), with all its slices."""
    # A booking later this week leaves it free now; a partitioned GPU needs every slice free too.
    return all(c.state in ("free", "later") for c in (cell, *cell.slices))


# --- pools -----------------------------------------------------------------------------------------

SEGMENTS = ("allocated", "free", *BUCKETS)
SEGMENT_TEXT = {
    "allocated": "atoms held by bookings now or later",
    "free": "on schedulable nodes and not booked",
    "excluded": "nodes that add no capacity to this pool",
    "maintenance": "nodes cordoned or in maintenance",
    "provisioning": "nodes still provisioning",
    "unreachable": "nodes not connected",
    "unhealthy": "NoSchedule nodes, unhealthy or unbookable devices",
}


@dataclass
class Segment:
    name: str
    count: int
    percent: float
    title: str


@dataclass
class ClassBar:
    """One device class of a pool: its rollup as a stacked bar."""

    device_class: str
    total: int
    segments: list[Segment]


def class_bar(rollup: PoolCapacityRollup) -> ClassBar:
    """Return a rollup's buckets as bar segments; free is what no bucket and no booking holds."""
    counts = {b: getattr(rollup, b) for b in BUCKETS}
    counts["allocated"] = rollup.allocated
    counts["free"] = max(0, rollup.total - rollup.allocated - sum(getattr(rollup, b) for b in BUCKETS))
    # Bookings on a node that was cordoned later count twice; widths share the sum so they never overflow.
    width = max(1, sum(counts.values()))
    segments = [
        Segment(name, counts[name], round(100 * counts[name] / width, 2), SEGMENT_TEXT[name])
        for name in SEGMENTS
    ]
    return ClassBar(rollup.device_class, rollup.total, segments)


@login_required
def pools(request: HttpRequest) -> HttpResponse:
    """List the pools the user may see with their capacity at a glance."""
    pool_list = visible_pools(request.user)
    ids = [p.pk for p in pool_list]
    nodes = dict(Node.objects.filter(pool_id__in=ids).values_list("pool_id").annotate(n=Count("id")))
    bars = defaultdict(list)
    for rollup in PoolCapacityRollup.objects.filter(pool_id__in=ids).order_by("pool_id", "device_class"):
        bars[rollup.pool_id].append(class_bar(rollup))
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
def pool_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """Show a pool's nodes with their GPU grid, filtered and 50 to a page."""
    pool = visible_pool(request.user, slug)
    form = NodeFilterForm(request.GET)
    form.is_valid()
    queryset = Node.objects.filter(pool=pool).select_related("owner_tenant").order_by("name")
    filter_error = None
    try:
        queryset = filter_nodes(queryset, request.GET)
    except FilterError as err:
        filter_error = err
        form.add_error(err.field if err.field in form.fields else None, err.message)
        queryset = queryset.none()
    paginator = Paginator(queryset, NODES_PER_PAGE)
    page_obj = paginator.get_page(request.GET.get("page"))
    now = timezone.now()
    rows = node_rows(list(page_obj.object_list), pool, request.user, now)
    common_labels = split_common_labels(rows)
    query = request.GET.copy()
    query.pop("page", None)
    return page(
        request,
        "capacity/pool_detail.html",
        {
            "nav": "pools",
            "pool": pool,
            "form": form,
            "filter_error": filter_error,
            "rows": rows,
            "common_labels": common_labels,
            "page_obj": page_obj,
            "query": query.urlencode(),
            "next": request.get_full_path(),
            "cell_text": CELL_TEXT,
        },
        partial="nodes",
    )


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


# --- one node ----------------------------------------------------------------------------------------


@dataclass
class Lane:
    """A device's line in the booking timeline."""

    label: str
    uuid: str
    slice: bool
    bars: list[dict]


def timeline(devices: list[Device], user, now: datetime) -> dict:
    """Return timeline lanes for the devices over two days back to a week ahead (one query)."""
    start, end = now - TIMELINE_BEHIND, now + TIMELINE_AHEAD
    span = (end - start).total_seconds()
    bookings = bookings_by_device([d.pk for d in devices], start, end, user)
    by_pk = {d.pk: d for d in devices}

    def pos(moment: datetime) -> float:
        return round(100 * (min(max(moment, start), end) - start).total_seconds() / span, 3)

    lanes = []
    for device in _parents_first(devices):
        parent = by_pk.get(device.parent_id) if device.parent_id else None
        bars = []
        for b in bookings.get(device.pk, []):
            left = pos(b.start)
            when = "past" if b.end <= now else "now" if b.start <= now else "later"
            bars.append(
                {
                    "left": left,
                    "width": max(0.4, pos(b.end) - left),
                    "title": b.text,
                    "text": b.short,
                    "when": when,
                }
            )
        lanes.append(Lane(device_label(device, parent), device.uuid, parent is not None, bars))
    midnight = start.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    ticks = []
    while midnight < end:
        # The last label would run past the track's end.
        text = f"{midnight:%a %b %d}" if midnight < end - timedelta(hours=18) else ""
        ticks.append({"left": pos(midnight), "text": text})
        midnight += timedelta(days=1)
    return {"lanes": lanes, "ticks": ticks, "now": pos(now), "start": start, "end": end}


def _parents_first(devices: list[Device]) -> list[Device]:
    """Order devices as GPU, its slices, next GPU, … ."""
    children = defaultdict(list)
    for d in devices:
        if d.parent_id:
            children[d.parent_id].append(d)
    out = []
    for d in devices:
        if not d.parent_id:
            out.append(d)
            out.extend(sorted(children.get(d.pk, []), key=lambda c: (c.index, c.uuid)))
    return out


RANK_SHADE = {"NV": "nv", "PIX": "pix", "PXB": "pxb", "PHB": "phb", "NODE": "node", "SYS": "sys"}


def topology(devices: list[Device], links: list[DeviceLink]) -> dict:
    """Return the GPU × GPU link matrix as `nvidia-smi topo -m` prints it, with NUMA affinity."""
    gpus = sorted(
        (d for d in devices if d.parent_id is None and d.device_class == "gpu"), key=lambda d: d.index
    )
    pair = {}
    for link in links:
        text = f"NV{link.nvlinks}" if link.rank == DeviceLink.Rank.NV and link.nvlinks else link.rank
        pair[(link.device_a_id, link.device_b_id)] = pair[(link.device_b_id, link.device_a_id)] = (
            text,
            RANK_SHADE[link.rank],
        )
    rows = []
    for a in gpus:
        cells = []
        for b in gpus:
            if a.pk == b.pk:
                cells.append({"text": "X", "shade": "self"})
            else:
                text, shade = pair.get((a.pk, b.pk), ("?", "unknown"))
                cells.append({"text": text, "shade": shade})
        rows.append({"name": f"GPU{a.index}", "cells": cells, "numa": a.numa_node})
    return {"columns": [f"GPU{g.index}" for g in gpus], "rows": rows, "known": bool(links)}


def _node_context(node: Node, bound: dict | None = None) -> dict:
    """Return what the node panel (state, labels, taints, conditions, actions) needs."""
    prefetch_related_objects([node], "taints", "conditions", "labels")
    return {
        "node": node,
        "badges": _badges(node, node.pool),
        "labels": list(node.labels.all()),
        "taints": list(node.taints.all()),
        "conditions": list(node.conditions.all()),
        "forms": panel_forms(bound),
        "dedicated": next((t.value for t in node.taints.all() if t.key == "dedicated"), None),
    }


def _node_page_context(request: HttpRequest, node: Node, bound: dict | None = None) -> dict:
    """Return everything the node page shows."""
    now = timezone.now()
    row = node_rows([node], node.pool, request.user, now)[0]
    devices = list(node.devices.all())
    by_pk = {d.pk: d for d in devices}
    device_rows = [
        {
            "device": d,
            "label": device_label(d, by_pk.get(d.parent_id)),
            "attributes": sorted(d.attributes.items()),
        }
        for d in _parents_first(devices)
    ]
    return {
        "nav": "pools",
        "row": row,
        "devices": device_rows,
        "topology": topology(devices, list(DeviceLink.objects.filter(node=node))),
        "timeline": timeline(devices, request.user, now),
        **_node_context(node, bound),
    }


@login_required
def node_detail(request: HttpRequest, name: str) -> HttpResponse:
    """Show one node: devices, topology matrix, booking timeline, state and (operators) actions."""
    node = visible_node(request.user, name)
    return page(request, "capacity/node_detail.html", _node_page_context(request, node), partial="panel")


@require_POST
@operator_required
def node_action(request: HttpRequest, name: str, action: str) -> HttpResponse:
    """Run an operator action from the node page; htmx gets the panel back, others a redirect."""
    if action not in ACTIONS:
        raise Http404(f"no node action {action}")
    node = visible_node(request.user, name)
    form = ACTIONS[action](request.POST, prefix=action)
    ok = form.apply(node)
    if ok and not wants_partial(request):
        return redirect("node-detail", name=node.name)
    node = visible_node(request.user, name)
    bound = {} if ok else {action: form}
    errors = None
    if not ok:
        # A button has no field to show its error by: every message goes above the panel's buttons.
        errors = (
            form.non_field_errors()
            if action in PANEL_FORMS
            else [m for ms in form.errors.values() for m in ms]
        )
    if wants_partial(request):
        context = {**_node_context(node, bound), "action_errors": errors}
    else:
        # Without JavaScript a refused action shows the whole page, the error next to its field.
        context = {**_node_page_context(request, node, bound), "action_errors": errors}
    return page(request, "capacity/node_detail.html", context, partial="panel")


# --- preview and booking ---------------------------------------------------------------------------


def _request_form(request: HttpRequest, form_class=RequestForm, data=None, initial=None):
    """Return the request form with the tenants and pools this user may choose."""
    return form_class(
        data,
        initial=initial,
        tenants=visible_tenants(request.user),
        pools=visible_pools(request.user),
    )


def _atom_labels(uuids: list[str]) -> dict[str, str]:
    """Return GPU3-style names for device uuids (one query)."""
    devices = Device.objects.filter(uuid__in=uuids).select_related("parent")
    return {d.uuid: device_label(d, d.parent) for d in devices}


@dataclass
class RejectedGroup:
    """Rejections that read the same, as the pending summary groups them."""

    count: int
    label: str
    nodes: list[tuple[str, str, str]]  # (node, filter, reason)


def explain(result: services.Preview) -> dict:
    """Return a preview as the page shows it: ranked candidates and every rejection, grouped."""
    plan = result.plan
    ranked = list(plan.gang or plan.ranked)
    shown = ranked[: services.MAX_PREVIEW_CANDIDATES]
    labels = _atom_labels([a for r in shown for group in r.atoms for a in group])
    scorers: list[str] = []
    for r in shown:
        scorers.extend(s for s in r.scores if s not in scorers)
    candidates = [
        {
            "node": r.node_id,
            "atoms": [(labels.get(a, a), a) for group in r.atoms for a in group],
            "scores": [r.scores.get(s) for s in scorers],
            "score": r.score,
        }
        for r in shown
    ]
    groups: dict[str, RejectedGroup] = {}
    for rejection in plan.rejected:
        label = rejection_label(rejection)
        group = groups.setdefault(label, RejectedGroup(0, label, []))
        group.count += 1
        group.nodes.append((rejection.node_id, rejection.filter, rejection.reason))
    # Most common first, ties in first-seen order, as the pending summary orders them.
    ordered = sorted(groups.values(), key=lambda g: -g.count)
    return {
        "fits": result.fits,
        "reason": result.reason,
        "candidates": candidates,
        "more": len(ranked) - len(shown),
        "fitting": len(ranked),
        "scorers": scorers,
        "rejected": ordered,
        "rejected_count": len(plan.rejected),
        "node_count": plan.node_count,
    }


@require_http_methods(["GET", "POST"])
@login_required
def preview(request: HttpRequest) -> HttpResponse:
    """Ask where a request would land now, and why every other node would not take it."""
    answer = None
    if request.method == "POST":
        form = _request_form(request, data=request.POST)
        if form.is_valid():
            try:
                result = services.preview(form.request_data(), scope=scope_for(request.user), explain=True)
            except CapacityError as err:
                form.add_capacity_error(err)
            else:
                answer = explain(result)
    else:
        form = _request_form(
            request, initial={k: v for k, v in request.GET.items() if k in ("pool", "tenant")}
        )
    return page(
        request,
        "capacity/preview.html",
        {"nav": "preview", "form": form, "answer": answer, "device_classes": _device_classes()},
        partial="preview-body",
    )


def _device_classes() -> list[str]:
    return list(Device.objects.order_by().values_list("device_class", flat=True).distinct())


@require_POST
@login_required
def selector_check(request: HttpRequest) -> HttpResponse:
    """Parse a selector as the user types: the error, or the selector as the services read it."""
    form = SelectorForm(request.POST)
    form.is_valid()
    text = form.cleaned_data.get("selector", "").strip()
    error = formatted = None
    if text:
        try:
            formatted = format_selector(parse_selector(text))
        except CapacityError as err:
            error = err.message
    return page(
        request,
        "capacity/request_fields.html",
        {"selector_error": error, "selector_formatted": formatted},
        partial="selector-check",
    )


@require_http_methods(["GET", "POST"])
@login_required
def book(request: HttpRequest) -> HttpResponse:
    """Book capacity; answers placed with the node and atoms, or pending with the reason."""
    booked = None
    if request.method == "POST":
        form = _request_form(request, BookForm, data=request.POST)
        if form.is_valid():
            try:
                result = services.reserve(form.request_data(), scope=scope_for(request.user))
            except CapacityError as err:
                form.add_capacity_error(err)
            else:
                if not wants_partial(request):
                    return redirect("reservation-detail", pk=result.reservation.pk)
                booked = reservation_rows([result.reservation])[0]
                # A fresh key, so the next booking from this page is a new one.
                again = {k: v for k, v in form.cleaned_data.items() if k != "idempotency_key"}
                form = _request_form(request, BookForm, initial=again)
    else:
        form = _request_form(request, BookForm, initial={k: v for k, v in request.GET.items() if k == "pool"})
    return page(
        request,
        "capacity/book.html",
        {"nav": "book", "form": form, "booked": booked, "device_classes": _device_classes()},
        partial="book-body",
    )


# --- reservations ----------------------------------------------------------------------------------


@dataclass
class ReservationRow:
    """A reservation with where it landed: nodes and atoms, or why it is pending."""

    reservation: Reservation
    allocations: list[dict]
    message: str

    @property
    def nodes(self) -> list[str]:
        return list(dict.fromkeys(a["node"] for a in self.allocations))

    @property
    def releasable(self) -> bool:
        return self.reservation.status != Reservation.Status.RELEASED


def reservation_rows(reservations: list[Reservation]) -> list[ReservationRow]:
    """Return rows for these reservations in three queries, whatever their number."""
    allocations = services.allocations_for(reservations)
    labels = _atom_labels([uuid for rows in allocations.values() for a in rows for uuid in a["atoms"]])
    by_reservation = {
        pk: [
            {
                "node": a["nodeId"],
                "atoms": [(labels.get(uuid, uuid), uuid) for uuid in a["atoms"]],
                "resources": a["resources"],
                "released_at": a["releasedAt"],
            }
            for a in rows
        ]
        for pk, rows in allocations.items()
    }
    out = []
    for r in reservations:
        condition = r.condition(services.UNSCHEDULABLE) if r.status == Reservation.Status.PENDING else None
        out.append(ReservationRow(r, by_reservation.get(r.pk, []), (condition or {}).get("message", "")))
    return out


@login_required
def reservations(request: HttpRequest) -> HttpResponse:
    """List the user's reservations (operators: everyone's, with a tenant filter)."""
    scope = scope_for(request.user)
    tenants = visible_tenants(request.user)
    form = ReservationFilterForm(request.GET, tenants=tenants)
    form.is_valid()
    filters = getattr(form, "cleaned_data", {})
    queryset = services.list_reservations(
        scope=scope,
        status=filters.get("status") or None,
        tenant=filters.get("tenant") or None,
    ).order_by("-created_at", "-id")
    page_obj = Paginator(queryset, RESERVATIONS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return page(
        request,
        "capacity/reservations.html",
        {
            "nav": "reservations",
            "form": form,
            "rows": reservation_rows(list(page_obj.object_list)),
            "page_obj": page_obj,
            "query": query.urlencode(),
            "show_tenant_filter": scope.tenants is None or len(tenants) > 1,
            "next": request.get_full_path(),
        },
        partial="reservation-list",
    )


def _reservation_or_404(request: HttpRequest, pk: int) -> Reservation:
    try:
        return services.get(pk, scope=scope_for(request.user))
    except CapacityError as err:
        if err.code == NOT_FOUND:
            raise Http404(err.message) from None
        raise


@login_required
def reservation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """Show one reservation: status, window, where it landed or why it waits."""
    reservation = _reservation_or_404(request, pk)
    return page(
        request,
        "capacity/reservation_detail.html",
        {"nav": "reservations", "row": reservation_rows([reservation])[0]},
    )


@require_http_methods(["GET", "POST"])
@login_required
def release(request: HttpRequest, pk: int) -> HttpResponse:
    """Release a reservation: GET asks to confirm (no JavaScript), POST releases."""
    reservation = _reservation_or_404(request, pk)
    if request.method == "GET":
        return page(
            request,
            "capacity/release_confirm.html",
            {
                "nav": "reservations",
                "row": reservation_rows([reservation])[0],
                "next": safe_next(request, reverse("reservations")),
            },
        )
    reservation = services.release(reservation.pk, scope=scope_for(request.user))
    if not wants_partial(request):
        return redirect(safe_next(request, reverse("reservations")))
    return page(
        request,
        "capacity/reservations.html",
        {"row": reservation_rows([reservation])[0], "next": safe_next(request, reverse("reservations"))},
        partial="reservation-row",
    )
