"""Errors the placement core raises, with the codes the API reports."""

from __future__ import annotations

from typing import Final

INVALID_INPUT: Final = "INVALID_INPUT"
UNSUPPORTED: Final = "UNSUPPORTED"
NOT_FOUND: Final = "NOT_FOUND"
FORBIDDEN: Final = "FORBIDDEN"
CONFLICT: Final = "CONFLICT"
QUOTA_EXCEEDED: Final = "QUOTA_EXCEEDED"

ERROR_CODES: Final = frozenset({INVALID_INPUT, UNSUPPORTED, NOT_FOUND, FORBIDDEN, CONFLICT, QUOTA_EXCEEDED})


class CapacityError(Exception):
    """Refuse a request with a stable code and a human-readable message."""

    def __init__(self, code: str, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"CapacityError({self.code!r}, {self.message!r})"


class PluginConfigError(ValueError):
    """Report a scheduler plugin list that cannot be used as configured."""
