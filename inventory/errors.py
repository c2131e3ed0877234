"""Errors inventory services raise, with the same stable codes as capacity's (config.errors)."""

from config.errors import BerthError


class InventoryError(BerthError):
    """Refuse an inventory change with a stable code and a human-readable message."""
