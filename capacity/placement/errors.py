"""Errors the placement core raises, with the codes the API reports (config.errors lists them)."""

from __future__ import annotations

from typing import Final

from config.errors import (
    CODES,
    CONFLICT,
    FORBIDDEN,
    IDEMPOTENCY_CONFLICT,
    IDEMPOTENCY_IN_FLIGHT,
    INVALID_INPUT,
    NOT_FOUND,
    POLICY_LIMIT,
    QUOTA_EXCEEDED,
    UNSUPPORTED,
    BerthError,
)

ERROR_CODES: Final = frozenset(CODES)

__all__ = [
    "CONFLICT",
    "ERROR_CODES",
    "FORBIDDEN",
    "IDEMPOTENCY_CONFLICT",
    "IDEMPOTENCY_IN_FLIGHT",
    "INVALID_INPUT",
    "NOT_FOUND",
    "POLICY_LIMIT",
    "QUOTA_EXCEEDED",
    "UNSUPPORTED",
    "CapacityError",
    "PluginConfigError",
]


class CapacityError(BerthError):
    """Refuse a request with a stable code and a human-readable message."""


class PluginConfigError(ValueError):
    """Report a scheduler plugin list that cannot be used as configured."""
