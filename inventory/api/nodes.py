"""A node named in an API path: its OpenAPI parameter and its lookup (NOT_FOUND when there is none).

Every view with `{name}` in its path reads the node through here (capacity's node actions, the
agents app's report, inventory's node history).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter

from inventory.errors import InventoryError
from inventory.models import Node

NODE_NAME = OpenApiParameter("name", str, OpenApiParameter.PATH, description="Node name.")


def existing_node(name: str) -> Node:
    """Return the node with this name, or refuse with NOT_FOUND."""
    node = Node.objects.filter(name=name).first()
    if node is None:
        raise InventoryError("NOT_FOUND", f"no node {name}")
    return node
