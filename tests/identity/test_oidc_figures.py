"""The figures docs/sso.md quotes: a sign-in round trip against the local provider, and the re-check's cost."""

import statistics
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sso_provider import sign_in
from tenants import make_tenant

pytestmark = pytest.mark.django_db

ROUNDS = 20


def test_sign_in_round_trip_and_the_recheck_cost(client, sso, capsys):
    make_tenant("acme")
    sso.user("alice", groups=["berth-tenant-acme"])
    sign_in(client, "alice")  # the discovery document and the first user, outside the timing
    took = []
    for _ in range(ROUNDS):
        client.logout()
        started = time.perf_counter()
        answer, _ = sign_in(client, "alice")
        took.append(time.perf_counter() - started)
        assert answer.status_code == 302
    with CaptureQueriesContext(connection) as within:
        client.get("/accounts/password_reset/")  # a page without queries of its own: what the check adds
    session = client.session
    session["oidc_id_token_expiration"] = 0
    session.save()
    with CaptureQueriesContext(connection) as due:
        started = time.perf_counter()
        bounce = client.get("/reservations/")
        due_ms = (time.perf_counter() - started) * 1000
    assert bounce.status_code == 302
    with capsys.disabled():
        print(
            f"\nSSO sign-in round trip p50 {statistics.median(took) * 1000:.0f} ms, "
            f"max {max(took) * 1000:.0f} ms over {ROUNDS}; a page within the re-check window "
            f"{len(within.captured_queries)} statements; the request that is due {len(due.captured_queries)} "
            f"statements, {due_ms:.1f} ms, then one provider round trip"
        )
