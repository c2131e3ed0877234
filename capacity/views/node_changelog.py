"""The node page's history, a page at a time: who changed the node, its taints and labels, when and why."""

from __future__ import annotations

from django.core.paginator import Page, Paginator

from inventory.models import Node
from inventory.node_changelog import entries, node_history

HISTORY_PAGE = 20


def history_page(node: Node, number: object = 1) -> Page:
    """Return a page of the node's history, newest first (a bad or past-the-end number: the nearest)."""
    found = Paginator(node_history(node), HISTORY_PAGE).get_page(number)
    found.object_list = entries(found.object_list)
    return found
