"""A signed-in user issues and revokes their own API token from a page: no operator needed."""

import re

from django.test import Client
from rest_framework.authtoken.models import Token


def test_a_tenant_issues_a_token_sees_its_key_once_uses_it_and_revokes_it(alice, acme_user):
    page = alice.get("/accounts/token/").text
    assert "You have no API token." in page and 'aria-current="page">API token<' in page

    issued = alice.post("/accounts/token/", {"action": "issue"}).text
    key = re.search(r'<code class="token-key">([0-9a-f]{40})</code>', issued).group(1)
    assert Token.objects.get(user=acme_user).key == key
    assert "Works until" in issued
    assert key not in alice.get("/accounts/token/").text  # shown once

    api = Client()
    assert api.get("/api/v1/pools", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    revoked = alice.post("/accounts/token/", {"action": "revoke"}).text
    assert re.search(r'id="token-state">✕ Token revoked at \d{4}-\d\d-\d\dT\d\d:\d\dZ', revoked)
    assert api.get("/api/v1/pools", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401

    again = alice.post("/accounts/token/", {"action": "issue"}).text
    new_key = re.search(r'<code class="token-key">([0-9a-f]{40})</code>', again).group(1)
    assert new_key != key
    assert api.get("/api/v1/pools", HTTP_AUTHORIZATION=f"Token {new_key}").status_code == 200


def test_the_token_page_is_for_signed_in_users_only(client):
    response = client.get("/accounts/token/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
