"""What every signed-in request pays before its own work: one statement, and nothing kept stale.

Session, user, operator group and tenants are read in the statement that reads the session
(identity/sessions.py), or the token (config/api/auth.py); nothing is cached, so signing out, a
changed password, a removed membership, a demoted operator and a revoked token take effect on the
very next request.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

pytestmark = [pytest.mark.django_db, pytest.mark.urls("who_urls")]

# What a request may read before its own work, whichever way it signed in.
OVERHEAD = 1
# What authentication reads: after the first statement none may read these again.
WHO_TABLES = re.compile(
    r'\b"?(identity_session|django_session|auth_user|auth_user_groups|auth_group|'
    r'inventory_tenant_users|authtoken_token)"?\b'
)


class Statements:
    """The SQL statements run while the block runs."""

    def __enter__(self):
        self.sql: list[str] = []
        self._wrapper = connection.execute_wrapper(self._count)
        self._wrapper.__enter__()
        return self

    def _count(self, execute, sql, params, many, context):
        self.sql.append(sql)
        return execute(sql, params, many, context)

    def __exit__(self, *exc):
        self._wrapper.__exit__(*exc)


@pytest.fixture
def operators(db):
    from django.contrib.auth.models import Group

    return Group.objects.get_or_create(name="operators")[0]


@pytest.fixture
def alice(tenant, other_tenant):
    user = get_user_model().objects.create_user("alice", password="pw-alice-123")
    tenant.users.add(user)
    other_tenant.users.add(user)
    return user


@pytest.fixture
def olga(operators):
    user = get_user_model().objects.create_user("olga", password="pw-olga-123")
    user.groups.add(operators)
    return user


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _token(user) -> str:
    from identity.tokens import issue_token

    return issue_token(user).key


@pytest.mark.parametrize("who", ["alice", "olga"])
@pytest.mark.parametrize("url", ["/who/", "/api/v1/who"])
def test_a_signed_in_request_reads_who_it_is_in_one_statement(request, who, url):
    client = _signed_in(request.getfixturevalue(who))
    client.get(url)
    with Statements() as seen:
        answer = client.get(url)
    assert answer.status_code == 200
    assert answer.json()["user"] == who
    assert len(seen.sql) == OVERHEAD, seen.sql


@pytest.mark.parametrize("who", ["alice", "olga"])
def test_a_token_request_reads_who_it_is_in_one_statement(request, who):
    key = _token(request.getfixturevalue(who))
    with Statements() as seen:
        answer = Client().get("/api/v1/who", HTTP_AUTHORIZATION=f"Token {key}")
    assert answer.status_code == 200, answer.content
    assert answer.json()["user"] == who
    assert len(seen.sql) == OVERHEAD, seen.sql


def test_the_one_statement_reads_the_tenants_and_the_operator_group(alice, olga, tenant, other_tenant):
    assert _signed_in(alice).get("/who/").json() == {
        "user": "alice",
        "operator": False,
        "tenants": ["acme", "globex"],
        "ids": sorted([tenant.pk, other_tenant.pk]),
    }
    assert _signed_in(olga).get("/who/").json()["operator"] is True


def test_a_kept_pool_page_reads_session_user_group_and_tenants_once(alice, pool, tenant):
    """A real page: after the first statement nothing reads the session, user, groups or tenants again."""
    pool.tenants.add(tenant)
    client = _signed_in(alice)
    client.get(f"/pools/{pool.slug}/")
    with Statements() as seen:
        assert client.get(f"/pools/{pool.slug}/").status_code == 200
    assert "identity_session" in seen.sql[0]
    again = [sql for sql in seen.sql[1:] if WHO_TABLES.search(sql)]
    assert again == []


@pytest.mark.parametrize("url", ["/api/v1/reservations", "/api/v1/pools"])
def test_an_api_read_by_token_reads_token_user_group_and_tenants_once(alice, pool, tenant, url):
    """Real API reads: the token's statement first, then none of those tables again."""
    pool.tenants.add(tenant)
    key = _token(alice)
    with Statements() as seen:
        assert Client().get(url, HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    assert "authtoken_token" in seen.sql[0]
    again = [sql for sql in seen.sql[1:] if WHO_TABLES.search(sql)]
    assert again == []


def test_signing_out_ends_the_session_for_every_copy_of_its_cookie(alice):
    client = _signed_in(alice)
    copy = Client()
    copy.cookies = client.cookies.__class__(client.cookies)
    assert copy.get("/who/").status_code == 200
    client.post("/accounts/logout/")
    assert copy.get("/who/").status_code == 302  # to the sign-in page
    assert copy.get("/api/v1/who").status_code in (401, 403)


def test_a_changed_password_ends_other_sessions_at_once(alice):
    client = _signed_in(alice)
    assert client.get("/who/").status_code == 200
    alice.set_password("a-new-password-456")
    alice.save()
    assert client.get("/who/").status_code == 302


def test_a_deactivated_or_deleted_user_is_signed_out_at_once(alice, olga):
    client, other = _signed_in(alice), _signed_in(olga)
    alice.is_active = False
    alice.save()
    assert client.get("/who/").status_code == 302
    olga.delete()
    assert other.get("/who/").status_code == 302


def test_a_removed_membership_takes_effect_on_the_next_request(alice, tenant):
    client = _signed_in(alice)
    key = _token(alice)
    assert client.get("/who/").json()["tenants"] == ["acme", "globex"]
    tenant.users.remove(alice)
    assert client.get("/who/").json()["tenants"] == ["globex"]
    answer = Client().get("/api/v1/who", HTTP_AUTHORIZATION=f"Token {key}")
    assert answer.json()["tenants"] == ["globex"]


def test_a_demoted_operator_loses_operator_access_on_the_next_request(olga, operators):
    client = _signed_in(olga)
    key = _token(olga)
    assert client.get("/api/v1/operators-only").status_code == 200
    assert Client().get("/api/v1/operators-only", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    olga.groups.remove(operators)
    assert client.get("/api/v1/operators-only").status_code == 403
    assert Client().get("/api/v1/operators-only", HTTP_AUTHORIZATION=f"Token {key}").status_code == 403
    assert client.get("/who/").json()["operator"] is False


def test_a_revoked_token_is_refused_on_the_next_request(alice):
    from rest_framework.authtoken.models import Token

    from identity.tokens import revoke_token

    key = _token(alice)
    assert Client().get("/api/v1/who", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    revoke_token(Token.objects.get(key=key), by="test")
    assert Client().get("/api/v1/who", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401
