"""Standard Webhooks signatures: what a receiver checks, with the standardwebhooks package."""

import base64
import hashlib
import hmac
import time

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from config.outbound.signing import headers, new_secret


def test_the_signature_is_hmac_sha256_over_id_timestamp_and_body_keyed_with_the_secrets_bytes():
    secret = new_secret()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32
    body = b'{"type":"reservation.placed"}'
    now = int(time.time())
    signed = headers(secret, "evt_7", now, body)
    key = base64.b64decode(secret[6:])
    expected = base64.b64encode(hmac.new(key, f"evt_7.{now}.".encode() + body, hashlib.sha256).digest())
    assert signed == {
        "webhook-id": "evt_7",
        "webhook-timestamp": str(now),
        "webhook-signature": f"v1,{expected.decode()}",
    }
    assert Webhook(secret).verify(body, signed) == {"type": "reservation.placed"}


def test_a_changed_body_another_secret_or_an_old_timestamp_does_not_verify():
    secret = new_secret()
    now = int(time.time())
    signed = headers(secret, "evt_7", now, b"{}")
    for other_secret, other_body, other_headers in [
        (secret, b"{ }", signed),
        (new_secret(), b"{}", signed),
        (secret, b"{}", headers(secret, "evt_7", now - 301, b"{}")),
    ]:
        with pytest.raises(WebhookVerificationError):
            Webhook(other_secret).verify(other_body, other_headers)
