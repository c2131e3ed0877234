"""API tokens expire and can be revoked: by the CLI, the admin, or the caller itself."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from rest_framework.authtoken.models import Token

from identity.models import TokenLifetime


def refused(response):
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    body = response.json()
    assert set(body) == {"code", "message"} and body["code"] == "UNAUTHENTICATED"
    return body["message"]


def age(user, days):
    Token.objects.filter(user=user).update(created=timezone.now() - timedelta(days=days))


def test_a_token_works_until_token_days_after_it_was_issued(client_for, acme, db):
    age(acme, 89)
    assert client_for(acme).get("/api/v1/pools").status_code == 200
    age(acme, 91)
    message = refused(client_for(acme).get("/api/v1/pools"))
    assert message.startswith("Token expired at ") and message.endswith(": ask an operator for a new one.")


def test_token_days_is_a_setting(client_for, acme, settings):
    age(acme, 10)
    settings.TOKEN_DAYS = 7
    refused(client_for(acme).get("/api/v1/pools"))


def test_an_expired_token_is_refused_on_every_method(client_for, acme, lab):
    age(acme, 400)
    client = client_for(acme)
    refused(client.post("/api/v1/reservations", {}, format="json"))
    refused(client.post("/api/v1/token/revoke"))


def test_issue_token_replaces_the_old_token_and_sets_its_own_expiry(client_for, acme):
    old = acme.auth_token.key
    out = StringIO()
    call_command("issue_token", "acme", "--days", "2", stdout=out)
    token = Token.objects.get(user=acme)
    assert token.key != old and out.getvalue().startswith(f"{token.key}  (acme, expires ")
    assert refused(client_for().get("/api/v1/pools", HTTP_AUTHORIZATION=f"Token {old}")) == "Invalid token."
    acme.refresh_from_db()
    assert client_for(acme).get("/api/v1/pools").status_code == 200
    TokenLifetime.objects.filter(token=token).update(expires_at=timezone.now() - timedelta(seconds=1))
    refused(client_for(acme).get("/api/v1/pools"))


def test_issue_token_refuses_an_unknown_user_and_odd_days(db):
    with pytest.raises(CommandError, match="NOT_FOUND: no user 'nobody'"):
        call_command("issue_token", "nobody", stdout=StringIO())
    with pytest.raises(CommandError, match="INVALID_INPUT: --days must be 1 to 3650"):
        call_command("issue_token", "nobody", "--days", "0", stdout=StringIO())


def test_revoke_token_by_user_refuses_the_token_from_then_on(client_for, acme, globex):
    client = client_for(acme)
    assert client.get("/api/v1/pools").status_code == 200
    out = StringIO()
    call_command("revoke_token", "acme", stdout=out)
    assert out.getvalue().startswith(f"revoked acme's token {acme.auth_token.key[:6]}… at ")
    message = refused(client.get("/api/v1/pools"))
    assert message.startswith("Token revoked at ") and message.endswith(": ask an operator for a new one.")
    assert client_for(globex).get("/api/v1/pools").status_code == 200
    lifetime = TokenLifetime.objects.get(token=acme.auth_token)
    assert lifetime.revoked_by.endswith("(manage.py revoke_token)")


def test_revoke_token_by_key_and_twice_keeps_the_first_time(client_for, acme):
    key = acme.auth_token.key
    call_command("revoke_token", "--key", key, stdout=StringIO())
    first = TokenLifetime.objects.get(token_id=key).revoked_at
    call_command("revoke_token", "acme", stdout=StringIO())
    assert TokenLifetime.objects.get(token_id=key).revoked_at == first
    refused(client_for(acme).get("/api/v1/pools"))


def test_revoke_token_names_what_it_cannot_find(acme):
    with pytest.raises(CommandError, match="NOT_FOUND: 'nobody' has no API token"):
        call_command("revoke_token", "nobody", stdout=StringIO())
    with pytest.raises(CommandError, match="NOT_FOUND: no token nope"):
        call_command("revoke_token", "--key", "nope", stdout=StringIO())
    with pytest.raises(CommandError, match="INVALID_INPUT: name a USER or a --key"):
        call_command("revoke_token", stdout=StringIO())
    assert not TokenLifetime.objects.exists()


def test_a_caller_revokes_its_own_token(client_for, acme, globex):
    client = client_for(acme)
    response = client.post("/api/v1/token/revoke")
    assert response.status_code == 200
    assert response.json()["revokedAt"].endswith("Z")
    refused(client.get("/api/v1/pools"))
    refused(client.post("/api/v1/token/revoke"))
    assert client_for(globex).get("/api/v1/pools").status_code == 200


def test_signed_in_by_session_the_caller_revokes_its_token(client_for, acme, make_user):
    client = client_for()
    client.force_login(acme)
    assert client.post("/api/v1/token/revoke").status_code == 200
    refused(client_for(acme).get("/api/v1/pools"))
    Token.objects.filter(user=acme).delete()
    response = client.post("/api/v1/token/revoke")
    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "message": "you have no API token"}


def test_an_anonymous_caller_cannot_revoke_anything(anonymous, acme):
    refused(anonymous.post("/api/v1/token/revoke"))
    assert not TokenLifetime.objects.exists()


def test_the_admin_revokes_the_selected_tokens(client_for, acme, globex):
    from django.contrib.auth.models import User
    from django.test import Client

    admin = Client()
    admin.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    page = admin.get("/admin/authtoken/tokenproxy/")
    assert page.status_code == 200 and "Revoke the selected tokens" in page.text
    response = admin.post(
        "/admin/authtoken/tokenproxy/",
        {"action": "revoke", "_selected_action": [acme.auth_token.key]},
        follow=True,
    )
    assert "Revoked 1 token." in response.text
    refused(client_for(acme).get("/api/v1/pools"))
    assert client_for(globex).get("/api/v1/pools").status_code == 200
    assert TokenLifetime.objects.get(token=acme.auth_token).revoked_by == "root (admin)"


def test_revoking_takes_no_field_so_it_cannot_look_like_revoking_another_users_token(
    client_for, acme, globex
):
    """acme posting {"user": "globex"} is refused whole: before, it revoked acme's own token silently."""
    client = client_for(acme)
    response = client.post("/api/v1/token/revoke", {"user": "globex"}, format="json")
    assert (response.status_code, response.json()) == (
        400,
        {
            "code": "INVALID_INPUT",
            "message": "user is not a known field (token/revoke takes none: it revokes your own token)",
        },
    )
    assert client.get("/api/v1/pools").status_code == 200  # acme's token still works
    assert client_for(globex).get("/api/v1/pools").status_code == 200
    assert client.post("/api/v1/token/revoke", [], format="json").json()["message"] == (
        "the body must be empty or {} (token/revoke revokes your own token)"
    )
    assert client.post("/api/v1/token/revoke", {}, format="json").status_code == 200
