"""Audit benchmark (bench_audit): what the audit costs a booking and a node report, and a month's export.

1. Bookings through the API as a tenant (each a POST with its own request id), then releases: the
   statements each sends, how many of them name the actor and request (`set_config`), and the
   reservation events each leaves.
2. Node reports (bench_reports' fleet): history rows per report that changed something (the first)
   and per report that changed nothing (the later ones).
3. A month of `bookings` bookings as their events (two per booking, pending and placed, each named
   by one of 2,000 users and a request id) plus 1,000 trail rows and 2,000 sign-ins, written straight
   into the tables, then exported page by page as an operator would: every page's time, p50 and
   p95, without and with an actor filter, in JSON and in CSV. The rows are deleted afterwards.
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta

from django.contrib.auth import get_user_model
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from capacity.models import ReservationEvent
from devtools.bench.placements import _pct, build_pool
from devtools.bench.reports import SLUG as REPORTS_POOL
from devtools.bench.reports import run_reports
from inventory.models import Node, NodeLabel, NodeTaint, Tenant

MONTH_START = datetime(2026, 3, 1, tzinfo=UTC)
MONTH_END = datetime(2026, 4, 1, tzinfo=UTC)
# Synthetic events belong to reservation ids no real reservation will reach.
FAKE_IDS = 10**15
USERS = 2000


def _client(username: str, *, staff: bool = False, tenant: Tenant | None = None) -> APIClient:
    user, _ = get_user_model().objects.get_or_create(username=username, defaults={"is_staff": staff})
    if tenant is not None:
        tenant.users.add(user)
    token, _ = Token.objects.get_or_create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def booking_costs(count: int) -> dict:
    """Book and release `count` one-GPU reservations through the API; count statements and events."""
    pool = build_pool(8, 1)
    tenant = Tenant.objects.get(slug="bench-0")
    client = _client("bench-audit-tenant", tenant=tenant)
    body = {"tenantId": tenant.slug, "poolId": pool.slug, "devices": [{"class": "gpu", "count": 1}]}
    seen: list[str] = []

    def log(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    def measured(step) -> tuple[float, float, list]:
        seen.clear()
        first = ReservationEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
        with connection.execute_wrapper(log):
            done = [step(i) for i in range(count)]
        named = sum("set_config('berth.actor'" in sql for sql in seen)
        events = ReservationEvent.objects.filter(id__gt=first)
        assert not events.filter(actor__isnull=True).exists(), "an event names no actor"
        return len(seen) / count, named / count, [events.count() / count, done]

    def book(i):
        start = datetime.now(UTC) + timedelta(days=400 + i)
        answer = client.post(
            "/api/v1/reservations",
            body | {"during": {"start": start.isoformat(), "end": (start + timedelta(hours=1)).isoformat()}},
            format="json",
            headers={"X-Request-Id": f"bench-{uuid.uuid4().hex[:12]}"},
        )
        assert answer.status_code == 201, answer.content[:300]
        return answer.json()["id"]

    statements, named, (events, ids) = measured(book)
    released = iter(ids)
    r_statements, r_named, (r_events, _) = measured(
        lambda i: client.post(f"/api/v1/reservations/{next(released)}/release")
    )
    return {
        "bookings": count,
        "statementsPerBooking": round(statements, 1),
        "stampStatementsPerBooking": round(named, 2),
        "eventsPerBooking": round(events, 2),
        "statementsPerRelease": round(r_statements, 1),
        "stampStatementsPerRelease": round(r_named, 2),
        "eventsPerRelease": round(r_events, 2),
    }


def _history_rows() -> int:
    nodes = Node.objects.filter(pool__slug=REPORTS_POOL).values_list("pk", flat=True)
    return sum(
        model.history.filter(**{field: list(nodes)}).count()
        for model, field in ((Node, "id__in"), (NodeTaint, "node_id__in"), (NodeLabel, "node_id__in"))
    )


def report_costs(nodes: int) -> dict:
    """Post a first report (it creates the node's devices) and then two that change nothing."""
    run_reports(nodes, 1)
    first = _history_rows()
    # run_reports builds its nodes afresh: count the first round's rows, then the repeats' on top.
    run_reports(nodes, 3)
    total = _history_rows()
    return {
        "nodes": nodes,
        "historyRowsPerChangingReport": round(first / nodes, 2),
        "historyRowsPerRepeatedReport": round((total - first) / (nodes * 3), 2) if total >= first else None,
    }


_FILL = """
INSERT INTO capacity_reservationevent (reservation_id, at, status, conditions, actor, request_id)
SELECT %(base)s + g / 2, %(start)s + (g * %(step)s) * interval '1 microsecond',
       CASE WHEN g %% 2 = 0 THEN 'pending' ELSE 'placed' END, '[]'::jsonb,
       'user-' || ((g / 2) %% %(users)s), md5(g::text)
  FROM generate_series(0::bigint, %(rows)s - 1) g
"""
_TRAIL = """
INSERT INTO trail_auditrecord (at, actor, action, object, before, after, reason, request_id)
SELECT %(start)s + (g * %(step)s) * interval '1 microsecond', 'user-' || (g %% %(users)s), 'share.set',
       'share:bench/t' || g, '{"guaranteed_gpus": 1}'::jsonb, '{"guaranteed_gpus": 2}'::jsonb, '', md5(g::text)
  FROM generate_series(0::bigint, 999) g
"""
_SIGN_INS = """
INSERT INTO identity_signinevent (at, method, succeeded, username, issuer, subject, reason, request_id)
SELECT %(start)s + (g * %(step)s) * interval '1 microsecond', 'sso', true, 'user-' || (g %% %(users)s),
       'https://idp.example', 'sub-' || g, '', md5(g::text)
  FROM generate_series(0::bigint, 1999) g
"""


def _pages(client: APIClient, query: str, page_size: int) -> tuple[list[float], int]:
    times, rows = [], 0
    url = f"/api/v1/audit?{query}&page_size={page_size}"
    while url:
        t0 = time.perf_counter()
        answer = client.get(url)
        times.append((time.perf_counter() - t0) * 1000)
        assert answer.status_code == 200, answer.content[:300]
        if query.endswith("format=csv"):
            rows += answer.content.count(b"\n") - 1
            url = answer.headers.get("Link", "").partition("<")[2].partition(">")[0] or None
        else:
            page = answer.json()
            rows += len(page["results"])
            url = page["next"]
    return times, rows


def export_month(bookings: int, page_size: int = 500) -> dict:
    """Export a month of `bookings` bookings' events (and some trail and sign-in rows)."""
    rows = 2 * bookings
    span = (MONTH_END - MONTH_START) // timedelta(microseconds=1)
    params = {"base": FAKE_IDS, "start": MONTH_START, "users": USERS, "rows": rows}
    with connection.cursor() as cur:
        cur.execute(_FILL, params | {"step": span // rows})
        cur.execute(_TRAIL, params | {"step": span // 1000})
        cur.execute(_SIGN_INS, params | {"step": span // 2000})
        cur.execute("ANALYZE capacity_reservationevent, trail_auditrecord, identity_signinevent")
    client = _client("bench-audit-operator", staff=True)
    month = (
        f"from={MONTH_START.isoformat().replace('+', '%2B')}&to={MONTH_END.isoformat().replace('+', '%2B')}"
    )
    figures = {"bookings": bookings, "events": rows, "pageSize": page_size}
    try:
        for name, query in (
            ("json", month),
            ("csv", f"{month}&format=csv"),
            ("oneActor", f"{month}&actor=user-7"),
        ):
            t0 = time.perf_counter()
            times, listed = _pages(client, query, page_size)
            total = time.perf_counter() - t0
            times.sort()
            figures[name] = {
                "rows": listed,
                "pages": len(times),
                "p50Ms": round(_pct(times, 50), 1),
                "p95Ms": round(_pct(times, 95), 1),
                "totalS": round(total, 1),
            }
    finally:
        with connection.cursor() as cur:
            cur.execute("DELETE FROM capacity_reservationevent WHERE reservation_id >= %s", [FAKE_IDS])
            cur.execute("DELETE FROM trail_auditrecord WHERE object LIKE 'share:bench/t%%'")
            cur.execute("DELETE FROM identity_signinevent WHERE issuer = 'https://idp.example'")
    return figures
