"""Errors inventory services raise, with the same stable codes as capacity's (INVALID_INPUT, …)."""


class InventoryError(Exception):
    """Refuse an inventory change with a stable code and a human-readable message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
