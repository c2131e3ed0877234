"""Standard Webhooks signatures: what a receiver checks."""

import base64
import hashlib
import hmac

from webhooks.signing import headers, new_secret, verify


def test_the_signature_is_hmac_sha256_over_id_timestamp_and_body_keyed_with_the_secrets_bytes():
    secret = new_secret()
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32
    body = b'{"type":"reservation.placed"}'
    signed = headers(secret, "evt_7", 1_796_000_000, body)
    key = base64.b64decode(secret[6:])
    expected = base64.b64encode(hmac.new(key, b"evt_7.1796000000." + body, hashlib.sha256).digest()).decode()
    assert signed == {
        "webhook-id": "evt_7",
        "webhook-timestamp": "1796000000",
        "webhook-signature": f"v1,{expected}",
    }
    assert verify(secret, signed, body, now=1_796_000_100)


def test_a_changed_body_another_secret_or_an_old_timestamp_does_not_verify():
    secret = new_secret()
    signed = headers(secret, "evt_7", 1_796_000_000, b"{}")
    assert not verify(secret, signed, b"{ }", now=1_796_000_000)
    assert not verify(new_secret(), signed, b"{}", now=1_796_000_000)
    assert not verify(secret, signed, b"{}", now=1_796_000_000 + 301)
