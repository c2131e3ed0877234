"""Browser pages: pools and their nodes with what is booked on them, previews, bookings, reservations.

Pages that show inventory together with its bookings live here, not in inventory: capacity may read
inventory, inventory never reads capacity. Every view checks the user's role on the server.
"""

from .booking import book, preview, selector_check
from .nodes import node_action, node_detail, node_drain, node_history_page
from .pools import node_row_action, pool_detail, pool_policy, pool_share, pools
from .reservations import keep_when_idle, reclaim, release, reservation_detail, reservations

__all__ = [
    "book",
    "keep_when_idle",
    "node_action",
    "node_detail",
    "node_drain",
    "node_history_page",
    "node_row_action",
    "pool_detail",
    "pool_policy",
    "pool_share",
    "pools",
    "preview",
    "reclaim",
    "release",
    "reservation_detail",
    "reservations",
    "selector_check",
]
