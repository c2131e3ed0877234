"""Standard Webhooks signatures (https://www.standardwebhooks.com): pure, no Django.

A secret reads `whsec_<base64 of 32 random bytes>`; the signature of a delivery is
`v1,<base64 HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>">` keyed with those bytes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"


def new_secret() -> str:
    """Return a fresh secret, shown to the subscriber once."""
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """Return the `webhook-signature` header's value for this delivery."""
    key = base64.b64decode(secret.removeprefix(PREFIX))
    signed = message_id.encode() + b"." + str(timestamp).encode() + b"." + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """Return the three Standard Webhooks headers of a delivery."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, message_id, timestamp, body),
    }


def verify(secret: str, header: dict[str, str], body: bytes, now: int, tolerance: int = 300) -> bool:
    """Return whether a delivery's headers sign its body with this secret, within `tolerance` seconds."""
    try:
        timestamp = int(header["webhook-timestamp"])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance:
        return False
    expected = sign(secret, header.get("webhook-id", ""), timestamp, body).split(",", 1)[1]
    given = [s.split(",", 1)[1] for s in header.get("webhook-signature", "").split() if s.startswith("v1,")]
    return any(hmac.compare_digest(expected, g) for g in given)
