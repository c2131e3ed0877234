"""The node page's parts kept in the cache: its header and GPU grid, topology, timeline and devices.

Each is kept per the node's pool versions (capacity/views/page_cache.py): the inventory generation
moves with the node's own row (cordon, drain, maintenance), its devices, links and labels; the
booking version with its bookings, taints and maintenance windows. What reports and samples change
(conditions, last report, images, use without a booking) and the operators' history are in the
State panel and the History section, drawn on every request.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from itertools import chain

from django.db import connection
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import mark_safe

from capacity.access import Scope
from capacity.forms import TimelineForm
from capacity.models import MaintenanceWindow
from capacity.services.reservations import Booked, booked_on
from config.access import is_operator
from inventory.models import Device, DeviceLink, Node

from .common import TIMELINE_AHEAD, TIMELINE_BEHIND, Booking, bookings_by_device, device_label
from .page_cache import pool_fragments
from .rows import node_rows

TEMPLATE = "capacity/node_detail.html"
PARTS = ("head", "topology", "timeline", "devices")


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
            "awaiting": b.awaiting,
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
                bars.append(bar(b, f"⌛ {b.short}" if b.awaiting else b.short, b.text))
        lanes.append(Lane(device_label(device, parent), device.uuid, parent is not None, bars))
    if leases:
        node_bars = [
            bar(
                b,
                f"▣ {'⌛ ' if b.awaiting else ''}{b.short} lease" if b.mine else f"▣ leased by {b.holder}",
                b.text,
            )
            for b in leases.values()
        ]
        lanes.insert(0, Lane("Whole node", "", False, node_bars, node=True))
    bands = []
    shown_windows = list(windows(start, end)) if windows is not None else []
    for w in shown_windows:
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
        "awaiting": any(b.awaiting for rows in bookings.values() for b in rows),
        "ticks": ticks,
        "now": pos(now) if start <= now <= end else None,
        "start": start,
        "end": end,
        "moved": first_day is not None,
        "earlier": (shown - timedelta(days=7)).isoformat(),
        "later": (shown + timedelta(days=7)).isoformat(),
        # The next start or end drawn: a bar's colour (ended, running, later) changes then.
        "changes_at": min(
            (
                moment
                for moment in chain(
                    (m for rows in bookings.values() for b in rows for m in (b.start, b.end)),
                    (m for w in shown_windows for m in (w.starts_at, w.ends_at)),
                )
                if moment > now
            ),
            default=None,
        ),
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


def booked_text(running: int, later: int) -> str:
    """Return "2 running and 3 upcoming reservations" (counts of `affected`), "" when both are 0."""
    parts = [f"{n} {kind}" for n, kind in ((running, "running"), (later, "upcoming")) if n]
    if not parts:
        return ""
    noun = "reservation" if (later or running) == 1 else "reservations"
    return f"{' and '.join(parts)} {noun}"


def _timeline_context(
    request: HttpRequest, node: Node, devices: list[Device], now: datetime, booked: Booked
) -> dict:
    """Return the timeline from the page's `?from=` (a bad one shows its error and the current days)."""
    form = TimelineForm(request.GET if "from" in request.GET else None)
    first_day = form.cleaned_data["start"] if form.is_bound and form.is_valid() else None

    def windows(start: datetime, end: datetime) -> list:
        # The node's windows that overlap the span, soonest first (hatched as placement sees them).
        found = MaintenanceWindow.objects.filter(
            window_nodes__node_id=node.pk, starts_at__lt=end, ends_at__gt=start
        )
        return list(found.order_by("starts_at", "pk"))

    # Running and upcoming together, as the operators' panel counts them: a node running work
    # never reads as having none.
    return {
        "timeline": timeline(devices, request.user, now, first_day, windows),
        "timeline_form": form,
        "booked": booked_text(booked.running, booked.later),
        "next_start": booked.first_later,
    }


def node_fragments(
    request: HttpRequest, node: Node, scope: Scope, names: tuple[str, ...] = PARTS, more: dict | None = None
) -> dict[str, str]:
    """Return the node page's kept parts `names` as HTML: {"head_html": ..., ...}, one cache read.

    `more`: other parts read in the same go, name -> (draw, per_url (the query it reads), what else keys it).
    """

    def node_devices() -> list[Device]:
        # Read once, by the first part drawn: a kept page reads none.
        if "_node_devices" not in request.__dict__:
            request.__dict__["_node_devices"] = list(node.devices.all())
        return request.__dict__["_node_devices"]

    def context(csrf_token: str, **more) -> dict:
        return {"node": node, "is_operator": is_operator(request.user), "csrf_token": csrf_token, **more}

    def draw_head(csrf_token: str) -> tuple[str, datetime | None]:
        row = node_rows([node], node.pool, request.user, timezone.now())[0]
        return render_to_string(f"{TEMPLATE}#head", context(csrf_token, row=row), request), row.changes_at

    def draw_topology(csrf_token: str) -> tuple[str, datetime | None]:
        found = topology(node_devices(), list(DeviceLink.objects.filter(node=node)))
        return render_to_string(f"{TEMPLATE}#topology", context(csrf_token, topology=found), request), None

    def draw_timeline(csrf_token: str) -> tuple[str, datetime | None]:
        now = timezone.now()
        drawn = _timeline_context(request, node, node_devices(), now, booked_on(node.pk, now))
        html = render_to_string(f"{TEMPLATE}#timeline", context(csrf_token, **drawn), request)
        return html, drawn["timeline"]["changes_at"]

    def draw_devices(csrf_token: str) -> tuple[str, datetime | None]:
        found = node_devices()
        by_pk = {d.pk: d for d in found}
        rows = [
            {
                "device": d,
                "label": device_label(d, by_pk.get(d.parent_id)),
                "attributes": sorted(d.attributes.items()),
            }
            for d in _parents_first(found)
        ]
        return render_to_string(f"{TEMPLATE}#devices", context(csrf_token, devices=rows), request), None

    draws = {"head": draw_head, "topology": draw_topology, "timeline": draw_timeline, "devices": draw_devices}
    # Only the timeline reads the query (`?from=`); the key tells node from node by the name.
    # The topology and the devices are inventory alone: kept across the pool's bookings.
    wanted = {
        f"node-{node.pk}-{name}": (
            draws[name],
            ("from",) if name == "timeline" else (),
            "",
            name not in ("topology", "devices"),
            name == "timeline",  # it says which booking awaits approval: a reservation's change
        )
        for name in names
    }
    wanted.update({f"node-{node.pk}-{name}": spec for name, spec in (more or {}).items()})
    found = pool_fragments(request, node.pool_id, scope, wanted)
    return {f"{name}_html": mark_safe(found[f"node-{node.pk}-{name}"]) for name in (*names, *(more or {}))}


# What the State panel and the History section show that the inventory generation does not follow:
# the last report and refusal, conditions, images, use without a booking (the worker's rows), the
# taints, and the newest row of each history table, digested in one statement (index probes by node).
NODE_ACTIVITY_SQL = """
SELECT md5(concat_ws('|',
  (SELECT concat_ws('/', r.at, r.agent_at, r.by) FROM inventory_nodereport r WHERE r.node_id = %(node)s),
  (SELECT concat_ws('/', f.at, f.code, md5(f.message)) FROM inventory_noderefusal f WHERE f.node_id = %(node)s),
  (SELECT string_agg(concat_ws('/', c.id, c.type, c.status, c.reason, md5(c.message), c.last_transition_at), ',' ORDER BY c.id)
     FROM inventory_nodecondition c WHERE c.node_id = %(node)s),
  (SELECT md5(string_agg(concat_ws('/', i.image, i.state), ',' ORDER BY i.image))
     FROM inventory_nodeimagecache i WHERE i.node_id = %(node)s),
  (SELECT string_agg(concat_ws('/', u.device_id, md5(u.message)), ',' ORDER BY u.device_id)
     FROM capacity_unbookeduse u WHERE u.node_id = %(node)s),
  (SELECT md5(string_agg(concat_ws('/', t.id, t.key, t.value, t.effect), ',' ORDER BY t.id))
     FROM inventory_nodetaint t WHERE t.node_id = %(node)s),
  (SELECT max(history_id) FROM inventory_historicalnode WHERE id = %(node)s),
  (SELECT max(history_id) FROM inventory_historicalnodetaint WHERE node_id = %(node)s),
  (SELECT max(history_id) FROM inventory_historicalnodelabel WHERE node_id = %(node)s)))
"""


def node_activity(node_pk: int) -> str:
    """Return a digest of what the node's State panel and History show beyond its pool's versions."""
    with connection.cursor() as cur:
        cur.execute(NODE_ACTIVITY_SQL, {"node": node_pk})
        return cur.fetchone()[0]
