"""One node: devices, topology matrix, booking timeline and the operator panel."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Q, prefetch_related_objects
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from capacity import services
from capacity.access import is_operator, scope_for
from capacity.forms import DrainForm
from capacity.services.repair import live_on, moves_since
from capacity.services.reservations import Booked, booked_on, drain_state
from capacity.services.usage_hooks import unbooked_use_on
from config.replica import replica_reads
from config.web import login_required, operator_required, page, wants_partial
from inventory.forms import ACTIONS, PANEL_FORMS, ActionForm, ButtonForm, CordonForm, panel_forms
from inventory.models import Node, NodeRefusal, NodeReport
from inventory.node_changelog import history_page, state_entries

from .common import visible_node
from .node_fragments import PARTS, booked_text, node_activity, node_fragments
from .pool_sections import panels
from .rows import Badge, badges

# --- one node ----------------------------------------------------------------------------------------

IMAGES_SHOWN = 8  # images named on the node page; the rest counted


@dataclass
class DrainInfo:
    """A node being drained as the panel says it: until when work runs, and why (operators only)."""

    state: str  # "draining" or "drained"
    until: datetime | None
    since: datetime
    reason: str
    by: str = ""  # who started it (operators only)


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
    operator = scope.reads_operators_words
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


def _node_page_context(
    request: HttpRequest,
    node: Node,
    bound: dict | None = None,
    parts: tuple[str, ...] = PARTS,
    panel_sent: tuple[str, dict] | None = None,
) -> dict:
    """Return everything the node page shows: its kept `parts` as HTML, the panel's and history's data,
    the other apps' panels drawn now (`panel_sent`: one's name and what its form sent back)."""
    scope = scope_for(request.user)
    sent = dict([panel_sent]) if panel_sent else {}
    return {
        "nav": "pools",
        **node_fragments(request, node, scope, parts),
        **_node_context(node, bound, scope),
        **({"history": history_page(node)} if is_operator(request.user) else {}),
        "panels_html": mark_safe(
            "".join(p.html(request, node=node, **sent.get(p.name, {})) for p in panels())
        ),
    }


def _kept_page_context(request: HttpRequest, node: Node) -> dict:
    """Return the node page with its State panel and History kept too (a plain read, no form bound).

    They are kept per the pool's versions and a digest of what reports and the worker change
    (node_activity); the CSRF token in their forms is each reader's own.
    """
    scope = scope_for(request.user)
    operator = is_operator(request.user)

    def draw(part: str, data: Callable[[], dict]) -> Callable[[str], tuple[str, datetime | None]]:
        def drawn(csrf_token: str) -> tuple[str, datetime | None]:
            context = {"node": node, "is_operator": operator, "csrf_token": csrf_token, **data()}
            return render_to_string(f"capacity/node_detail.html#{part}", context, request), None

        return drawn

    activity = node_activity(node.pk)
    # What bookings change in an operator's panel is the counts a drain or a NoExecute taint would
    # move: keyed on them, the panel is kept across bookings on other nodes. A tenant's panel, and a
    # draining node's ("draining until" its last booking's end), follow the pool's bookings.
    booked = booked_on(node.pk, timezone.now()) if operator else None
    counts = f"{booked.running},{booked.later},{booked.first_later}" if booked else ""
    follows_bookings = not operator or node.drain_started_at is not None
    panel = draw("panel", lambda: _node_context(node, None, scope, booked))
    more = {"panel": (panel, (), f"{activity}|{counts}", follows_bookings)}
    if operator:
        more["history"] = (draw("history", lambda: {"history": history_page(node)}), (), activity, False)
    # The other apps' panels, kept under the pool's booking version (a window scheduled or deleted bumps it).
    for p in panels():
        more[p.name] = (p.draw(request, node=node), (), "", True)
    found = node_fragments(request, node, scope, PARTS, more)
    drawn = "".join(found.pop(f"{p.name}_html") for p in panels())
    return {"nav": "pools", "node": node, **found, "panels_html": mark_safe(drawn)}


@login_required
@replica_reads
def node_detail(request: HttpRequest, name: str) -> HttpResponse:
    """Show one node: devices, topology matrix, booking timeline, state and (operators) actions."""
    node = visible_node(request.user, name)
    # The timeline's earlier/later/today links swap the timeline alone; other htmx gets the panel.
    if getattr(request.htmx, "target", None) == "node-timeline":
        response = HttpResponse(
            node_fragments(request, node, scope_for(request.user), ("timeline",))["timeline_html"]
        )
        patch_vary_headers(response, ["HX-Request"])
        return response
    if wants_partial(request):
        return page(
            request, "capacity/node_detail.html", _node_page_context(request, node, parts=()), partial="panel"
        )
    return page(request, "capacity/node_detail.html", _kept_page_context(request, node))


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


def node_page(
    request: HttpRequest,
    name: str,
    status: int = 200,
    panel_sent: tuple[str, dict] | None = None,
    extra: dict | None = None,
) -> HttpResponse:
    """Answer another app's form on the node page (the maintenance app's windows and drain) with the
    page below the navigation (the timeline changes too): a panel drawn with what its form sent back,
    the State panel with `extra` (a drain's result, its refused form)."""
    node = visible_node(request.user, name)
    context = {**_node_page_context(request, node, panel_sent=panel_sent), **(extra or {})}
    status = 200 if wants_partial(request) else status  # htmx swaps nothing on a 4xx
    return page(request, "capacity/node_detail.html", context, partial="node-page", status=status)
