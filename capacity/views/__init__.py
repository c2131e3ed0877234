"""Browser pages: pools and their nodes with what is booked on them, previews, bookings, reservations.

Pages that show inventory together with its bookings live here, not in inventory: capacity may read
inventory, inventory never reads capacity. Every view checks the user's role on the server. This
face loads a page's module only when its view is asked for (config.face).
"""

from config.face import lazy_face

FACE = {
    "capacity.views.booking": ("book", "preview", "selector_check"),
    "capacity.views.nodes": ("node_action", "node_detail", "node_history_page"),
    "capacity.views.pools": ("node_row_action", "pool_detail", "pool_section", "pools"),
    "capacity.views.reservations": (
        "release",
        "reservation_detail",
        "reservations",
    ),
}

lazy_face(__name__, FACE)
