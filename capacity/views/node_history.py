"""The node page's history: who changed the node, its taints and labels, when and why (operators)."""

from __future__ import annotations

from django.core.paginator import Page, Paginator
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from config.web import operator_required, page
from inventory.models import Node
from inventory.node_history import entries, node_history

from .common import visible_node

HISTORY_PAGE = 20


def history_page(node: Node, number: object = 1) -> Page:
    """Return a page of the node's history, newest first (a bad or past-the-end number: the nearest)."""
    found = Paginator(node_history(node), HISTORY_PAGE).get_page(number)
    found.object_list = entries(found.object_list)
    return found


@require_GET
@operator_required
def node_history_page(request: HttpRequest, name: str) -> HttpResponse:
    """Show a page of the node's history: htmx gets the history section, others the whole node page."""
    from .nodes import _node_page_context

    node = visible_node(request.user, name)
    history = history_page(node, request.GET.get("page"))
    context = {"node": node, "history": history}
    if not request.htmx:
        context = {**_node_page_context(request, node), **context}
    return page(request, "capacity/node_detail.html", context, partial="history")
