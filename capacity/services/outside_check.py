"""The outside check's settings (docs/policy.md, Outside check): the URL and secret an operator sets.

The check itself is a pool rule, policy.outside_check: it asks the pool's policyWebhook about a
create before any lock. These validators stay with the pool policy's form and serializer
(services.pool_policy), which write the settings.
"""

from __future__ import annotations

import base64
import binascii

from capacity.placement import INVALID_INPUT, CapacityError
from config.outbound.signing import PREFIX, new_secret
from config.outbound.targets import TargetError, check_url, resolve

# Seconds for the lookup, connect, request and answer together: a URL's check here, the check's call
# in policy.outside_check.
DEADLINE = 2.0
MAX_URL = 2000
SECRET_BYTES = (24, 64)  # a settable secret's length, decoded

__all__ = ["DEADLINE", "check_secret", "check_webhook_url", "new_secret"]


def check_webhook_url(value: object, name: str = "policyWebhook") -> str:
    """Return an outside check's URL, checked as webhook subscriptions are; INVALID_INPUT naming `name`."""
    if not isinstance(value, str) or not value or len(value) > MAX_URL:
        raise CapacityError(INVALID_INPUT, f"{name}: an http or https URL of at most {MAX_URL} characters")
    try:
        _scheme, host, port, _path = check_url(value)
        resolve(host, port, timeout=DEADLINE)
    except TargetError as exc:
        raise CapacityError(INVALID_INPUT, f"{name}: {str(exc).removeprefix('url: ')}") from None
    return value


def check_secret(value: object) -> str:
    """Return a secret an operator sets (whsec_ and base64 of 24 to 64 bytes), or INVALID_INPUT."""
    bad = f"policyWebhookSecret must be {PREFIX} followed by base64 of {SECRET_BYTES[0]} to {SECRET_BYTES[1]} bytes"
    if not isinstance(value, str) or not value.startswith(PREFIX) or len(value) > 100:
        raise CapacityError(INVALID_INPUT, bad)
    try:
        raw = base64.b64decode(value.removeprefix(PREFIX), validate=True)
    except (binascii.Error, ValueError):
        raise CapacityError(INVALID_INPUT, bad) from None
    if not SECRET_BYTES[0] <= len(raw) <= SECRET_BYTES[1]:
        raise CapacityError(INVALID_INPUT, bad)
    return value
