"""Errors inventory services raise, with the same stable codes as capacity's (config.errors)."""

from config.errors import BerthError


class InventoryError(BerthError):
    """Refuse an inventory change with a stable code and a human-readable message."""


class IngestError(ValueError):
    """Input that cannot be applied; `code` is INVALID_INPUT, or CONFLICT for another node's device."""

    def __init__(self, message: str, code: str = "INVALID_INPUT") -> None:
        super().__init__(message)
        self.code = code


class FilterError(ValueError):
    """A filter value that cannot be used; `field` names the parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
