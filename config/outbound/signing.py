"""Standard Webhooks signatures (https://www.standardwebhooks.com), made by its own package. No Django.

A secret reads `whsec_<base64 of 32 random bytes>`; the signature of a delivery is
`v1,<base64 HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>">` keyed with those bytes.
Receivers check it with the same package: `Webhook(secret).verify(body, headers)`.
"""

from __future__ import annotations

import base64
import secrets
from datetime import UTC, datetime

from standardwebhooks import Webhook

PREFIX = "whsec_"


def new_secret() -> str:
    """Return a fresh secret, shown to the subscriber once."""
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """Return the three Standard Webhooks headers of a delivery."""
    at = datetime.fromtimestamp(timestamp, UTC)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": Webhook(secret).sign(message_id, at, body.decode()),
    }
