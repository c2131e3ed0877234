"""One node: devices, topology matrix, booking timeline and the operator panel."""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import Count, Q, prefetch_related_objects
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from capacity import services
from capacity.access import is_operator, scope_for
from capacity.forms import DrainForm, TimelineForm
from capacity.services import maintenance
from capacity.services.drain import Booked, DrainResult, booked_on, drain_state, live_on, moves_since
from capacity.services.usage_hooks import unbooked_use_on
from config.replica import replica_reads
from config.web import login_required, operator_required, page, wants_partial
from inventory.forms import ACTIONS, PANEL_FORMS, ActionForm, ButtonForm, CordonForm, panel_forms
from inventory.models import Device, DeviceLink, Node, NodeRefusal, NodeReport
from inventory.node_changelog import state_entries

from .common import (
    TIMELINE_AHEAD,
    TIMELINE_BEHIND,
    Booking,
    bookings_by_device,
    device_label,
    visible_node,
)
from .node_changelog import history_page
from .rows import Badge, badges, node_rows

# --- one node ----------------------------------------------------------------------------------------

IMAGES_SHOWN = 8  # images named on the node page; the rest counted


@dataclass
class Lane:
    """A device's line in the booking timeline."""

    label: str
    uuid: str
    slice: bool
    bars: list[dict]
    node: bool = False  # the whole node's lane: its leases, each drawn once


def timeline(
    devices: list[Device],
    user,
    now: datetime,
    first_day: date | None = None,
    windows: Callable[[datetime, datetime], list] | None = None,
) -> dict:
    """Return timeline lanes for the devices over two days back to a week ahead (one query).

    `windows(start, end)`, when given, returns the node's maintenance windows overlapping the span:
    they are drawn on a lane of their own at the top and as a band across every device's lane.

    From `first_day` (midnight UTC) the window is as long and starts there instead: the page moves
    through time a week at a time. A whole-node lease books every device; it is drawn once, on a
    lane of its own above the devices, and each device's lane shows only a plain band where the
    lease holds it.
    """
    start, end = now - TIMELINE_BEHIND, now + TIMELINE_AHEAD
    if first_day is not None:
        start = datetime.combine(first_day, time.min, tzinfo=UTC)
        end = start + TIMELINE_BEHIND + TIMELINE_AHEAD
    span = (end - start).total_seconds()
    bookings = bookings_by_device([d.pk for d in devices], start, end, user)
    by_pk = {d.pk: d for d in devices}

    def pos(moment: datetime) -> float:
        return round(100 * (min(max(moment, start), end) - start).total_seconds() / span, 3)

    def bar(b: Booking, text: str, title: str) -> dict:
        left = pos(b.start)
        return {
            "left": left,
            "width": max(0.4, pos(b.end) - left),
            "title": title,
            "text": text,
            "when": "past" if b.end <= now else "now" if b.start <= now else "later",
            "spot": b.spot,
            "held": b.lease,
        }

    lanes = []
    leases: dict[tuple, Booking] = {}
    for device in _parents_first(devices):
        parent = by_pk.get(device.parent_id) if device.parent_id else None
        bars = []
        for b in bookings.get(device.pk, []):
            if b.lease:
                leases.setdefault((b.reservation_id, b.start, b.end), b)
                bars.append(bar(b, "", f"{b.text}: the whole node"))
            else:
                bars.append(bar(b, b.short, b.text))
        lanes.append(Lane(device_label(device, parent), device.uuid, parent is not None, bars))
    if leases:
        node_bars = [
            bar(b, f"▣ {b.short} lease" if b.mine else f"▣ leased by {b.holder}", b.text)
            for b in leases.values()
        ]
        lanes.insert(0, Lane("Whole node", "", False, node_bars, node=True))
    bands = []
    for w in windows(start, end) if windows is not None else ():
        left = pos(w.starts_at)
        title = f"Maintenance window {w.pk}, {w.starts_at:%b %d %H:%M} – {w.ends_at:%b %d %H:%M} UTC"
        bands.append(
            {
                "left": left,
                "width": max(0.4, pos(w.ends_at) - left),
                "title": f"{title}: {w.reason}" if w.reason else title,
                "text": f"window {w.pk}" + (f": {w.reason}" if w.reason else ""),
                "when": "past" if w.ends_at <= now else "now" if w.starts_at <= now else "later",
                "spot": False,
                "held": False,
                "window": True,
            }
        )
    if bands:
        lanes.insert(0, Lane("Maintenance", "", False, bands, node=True))
    midnight = start.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    ticks = []
    while midnight < end:
        # The last label would run past the track's end.
        text = f"{midnight:%a %b %d}" if midnight < end - timedelta(hours=18) else ""
        ticks.append({"left": pos(midnight), "text": text})
        midnight += timedelta(days=1)
    # Earlier and later move the window a week, from the day it starts on.
    shown = first_day or start.date()
    return {
        "lanes": lanes,
        "bands": bands,
        "ticks": ticks,
        "now": pos(now) if start <= now <= end else None,
        "start": start,
        "end": end,
        "moved": first_day is not None,
        "earlier": (shown - timedelta(days=7)).isoformat(),
        "later": (shown + timedelta(days=7)).isoformat(),
    }


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


# A matrix grows with the square of its GPUs: past this many the page lists links, not a matrix.
MAX_MATRIX_GPUS = 64
RANK_SHADE = {"NV": "nv", "PIX": "pix", "PXB": "pxb", "PHB": "phb", "NODE": "node", "SYS": "sys"}


def topology(devices: list[Device], links: list[DeviceLink]) -> dict:
    """Return the GPU × GPU link matrix as `nvidia-smi topo -m` prints it, with NUMA affinity."""
    gpus = sorted(
        (d for d in devices if d.parent_id is None and d.device_class == "gpu"), key=lambda d: d.index
    )
    if len(gpus) > MAX_MATRIX_GPUS:
        return {"columns": [], "rows": [], "known": bool(links), "too_many": len(gpus)}
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


@dataclass
class DrainInfo:
    """A node being drained as the panel says it: until when work runs, and why (operators only)."""

    state: str  # "draining" or "drained"
    until: datetime | None
    since: datetime
    reason: str
    by: str = ""  # who started it (operators only)


def booked_text(running: int, later: int) -> str:
    """Return "2 running and 3 upcoming reservations" (counts of `affected`), "" when both are 0."""
    parts = [f"{n} {kind}" for n, kind in ((running, "running"), (later, "upcoming")) if n]
    if not parts:
        return ""
    noun = "reservation" if (later or running) == 1 else "reservations"
    return f"{' and '.join(parts)} {noun}"


def affected_text(running: int, later: int) -> str:
    """Return "2 running and 3 upcoming reservations are on this node" (counts of `affected`)."""
    verb = "is" if running + later == 1 else "are"
    return f"{booked_text(running, later)} {verb} on this node"


def _unusable_badge(node: Node) -> list[Badge]:
    """Return a badge when every device of the node is unhealthy or unbookable (else none).

    Its state may still read schedulable (nothing stops a placement there), yet nothing can be booked.
    """
    found = node.devices.filter(verified=True).aggregate(
        total=Count("pk"), usable=Count("pk", filter=Q(healthy=True, bookable=True))
    )
    if found["total"] and not found["usable"]:
        return [
            Badge(f"✕ 0 of {found['total']} devices usable", "bad", "every device is unhealthy or unbookable")
        ]
    return []


def button_form(bound: dict[str, ActionForm] | None) -> ActionForm:
    """Return the form whose reason the cordon and maintenance buttons share (a refused one kept)."""
    return next((f for f in (bound or {}).values() if isinstance(f, ButtonForm)), CordonForm())


def _node_context(
    node: Node, bound: dict | None = None, scope=services.EVERYONE, booked: Booked | None = None
) -> dict:
    """Return what the node panel (state, labels, taints, conditions, actions) needs.

    To a tenant, another tenant's dedication reads "another tenant" (its name stays hidden), and a
    drain's reason (the operator's own text) is not shown. Operators read how many reservations
    maintenance or a NoExecute taint would move, and are offered a drain instead.
    """
    prefetch_related_objects([node], "taints", "conditions", "labels")
    taints = list(node.taints.all())
    dedicated = next((t.value for t in taints if t.key == "dedicated"), None)
    dedicated_to = dedicated  # the dedicate form starts at the current one (operators only see it)
    if not services.sees_tenant(scope, dedicated):
        dedicated = "another tenant"
        taints = [copy.copy(t) for t in taints]
        for t in taints:
            if t.key == "dedicated":
                t.value = "another tenant"
    operator = scope.tenants is None
    # Who cordoned, drained or started maintenance, when and why: the operators' own record.
    state_changes = state_entries(node) if operator else {}
    drain = None
    state = drain_state(node)
    if state is not None:
        reason = node.drain_reason if operator else ""
        started = state_changes.get("drain")
        drain = DrainInfo(state[0], state[1], node.drain_started_at, reason, started.actor if started else "")
    impact = ""
    if operator:
        booked = booked or booked_on(node.pk, timezone.now())
        impact = affected_text(booked.running, booked.later) if booked.running or booked.later else ""
    return {
        "node": node,
        "drain": drain,
        # When the node last reported and through which credential (operators only).
        "last_report": NodeReport.objects.filter(node=node).first() if operator else None,
        # The last report refused (it changed nothing), and hardware waiting to be accepted.
        "last_refusal": NodeRefusal.objects.filter(node=node).first() if operator else None,
        "unverified": list(node.devices.filter(verified=False).order_by("index", "uuid")) if operator else [],
        # What its agent last said the node holds (the image-cached scorer's input), first few.
        "images": list(node.image_cache.order_by("image").values_list("image", "state")[: IMAGES_SHOWN + 1])
        if operator
        else [],
        "images_shown": IMAGES_SHOWN,
        # GPUs running processes no reservation holds (operators only).
        "unbooked_use": unbooked_use_on(node) if operator else [],
        "impact": impact,
        "drain_form": DrainForm(prefix="drain"),
        "state_changes": state_changes,
        "button_form": button_form(bound),
        "badges": [*badges(node, node.pool, scope), *_unusable_badge(node)],
        "labels": list(node.labels.all()),
        "taints": taints,
        "conditions": list(node.conditions.all()),
        "forms": panel_forms(bound, dedicated=dedicated_to if operator else None),
        "dedicated": dedicated,
        "no_schedule_reasons": [services.redact(r, scope) for r in node.no_schedule_reasons],
    }


def _timeline_context(
    request: HttpRequest, node: Node, devices: list[Device], now: datetime, booked: Booked
) -> dict:
    """Return the timeline from the page's `?from=` (a bad one shows its error and the current days)."""
    form = TimelineForm(request.GET if "from" in request.GET else None)
    first_day = form.cleaned_data["start"] if form.is_bound and form.is_valid() else None

    def windows(start: datetime, end: datetime) -> list:
        return list(maintenance.windows_over(node.pk, start, end))

    # Running and upcoming together, as the operators' panel counts them: a node running work
    # never reads as having none.
    return {
        "timeline": timeline(devices, request.user, now, first_day, windows),
        "timeline_form": form,
        "booked": booked_text(booked.running, booked.later),
        "next_start": booked.first_later,
    }


def _node_page_context(request: HttpRequest, node: Node, bound: dict | None = None) -> dict:
    """Return everything the node page shows."""
    now = timezone.now()
    row = node_rows([node], node.pool, request.user, now)[0]
    booked = booked_on(node.pk, now)
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
        **_timeline_context(request, node, devices, now, booked),
        **_node_context(node, bound, scope_for(request.user), booked),
        **({"history": history_page(node)} if is_operator(request.user) else {}),
    }


@login_required
@replica_reads
def node_detail(request: HttpRequest, name: str) -> HttpResponse:
    """Show one node: devices, topology matrix, booking timeline, state and (operators) actions."""
    node = visible_node(request.user, name)
    # The timeline's earlier/later/today links swap the timeline alone; other htmx gets the panel.
    moving = getattr(request.htmx, "target", None) == "node-timeline"
    return page(
        request,
        "capacity/node_detail.html",
        _node_page_context(request, node),
        partial="timeline" if moving else "panel",
    )


@require_POST
@operator_required
def node_action(request: HttpRequest, name: str, action: str) -> HttpResponse:
    """Run an operator action from the node page; htmx gets the whole node page back, others a redirect.

    The whole page, not the State card: an action changes the header, the GPU grid, the timeline
    and the history too. Work the action moved off the node (maintenance, a NoExecute taint: moved
    as the action commits, by BookingRepair) is summed up as a drain's is.
    """
    if action not in ACTIONS:
        raise Http404(f"no node action {action}")
    node = visible_node(request.user, name)
    form = ACTIONS[action](request.POST, prefix=action)
    before = live_on(node.name)
    ok = form.apply(node)
    moves = moves_since(node.name, before) if ok and before else None
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
    # Without JavaScript a refused action shows the whole page, the error next to its field.
    context = {**_node_page_context(request, node, bound), "action_errors": errors}
    if moves is not None and (moves.moved or moves.waiting or moves.left):
        context["moves"] = moves
    return page(request, "capacity/node_detail.html", context, partial="node-page")


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
    result: DrainResult | None = form.drain(node.name)
    node = visible_node(request.user, name)
    context = {
        **_node_page_context(request, node),
        "drain_result": result,
        **({} if result is not None else {"drain_form": form}),
    }
    return page(request, "capacity/node_detail.html", context, partial="node-page")


@require_GET
@operator_required
@replica_reads
def node_history_page(request: HttpRequest, name: str) -> HttpResponse:
    """Show a page of the node's history: htmx gets the history section, others the whole node page."""
    node = visible_node(request.user, name)
    history = history_page(node, request.GET.get("page"))
    context = {"node": node, "history": history}
    if not request.htmx:
        context = {**_node_page_context(request, node), **context}
    return page(request, "capacity/node_detail.html", context, partial="history")
