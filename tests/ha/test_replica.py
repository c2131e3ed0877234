"""Reads of pools and nodes go to the replica; a writer, a tenant's own bookings, a lagging or stopped
replica read from the primary, and `berth_replica_reads` says which.

The standby's replay is paused to make the replica visibly stale: the primary goes on committing
(the standby still receives and flushes WAL, which is what a synchronous commit waits for), while
every read the replica answers shows the state from before the pause.
"""

from __future__ import annotations

import http.client
import json
import re
import time
from urllib.parse import urlsplit

from devtools import ha

_CAUGHT_UP = "SELECT pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()"


def _ask(stack, method: str, path: str, token: str, cookie: str = "", body: dict | None = None):
    """Send one request on its own connection; return (status, parsed JSON or text, Set-Cookie)."""
    parts = urlsplit(stack.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    headers = {"Host": "127.0.0.1", "Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    if cookie:
        headers["Cookie"] = cookie
    conn.request(method, path, body=json.dumps(body).encode() if body is not None else None, headers=headers)
    answer = conn.getresponse()
    data = answer.read().decode()
    set_cookie = answer.getheader("Set-Cookie") or ""
    conn.close()
    kind = answer.getheader("Content-Type") or ""
    return answer.status, (json.loads(data) if kind.startswith("application/json") else data), set_cookie


def _reads(stack) -> dict[str, float]:
    status, text, _ = _ask(stack, "GET", "/metrics", stack.operator_token)
    assert status == 200
    return {
        outcome: float(value)
        for outcome, value in re.findall(r'berth_replica_reads_total\{outcome="(\w+)"\} ([0-9.e+]+)', text)
    }


def _node(stack) -> str:
    status, page, _ = _ask(stack, "GET", f"/api/v1/nodes?pool={stack.pool}&page_size=1", stack.operator_token)
    assert status == 200
    return page["results"][0]["name"]


def _state(stack, name: str, cookie: str = "") -> str:
    status, node, _ = _ask(stack, "GET", f"/api/v1/nodes/{name}", stack.operator_token, cookie)
    assert status == 200
    return node["state"]


def _wait_for(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_reads_go_to_the_replica_and_a_writer_reads_its_own_change_from_the_primary(replica_stack):
    stack = replica_stack
    name = _node(stack)
    assert _state(stack, name) == "schedulable"
    # A commit the standby replays just before the pause: the lag clock starts from it.
    stack.sql(stack.pair.primary_port, "SELECT txid_current()")
    _wait_for(lambda: stack.sql(stack.pair.standby_port, _CAUGHT_UP)[0][0])
    stack.sql(stack.pair.standby_port, "SELECT pg_wal_replay_pause()")

    status, cordoned, pin = _ask(
        stack, "POST", f"/api/v1/nodes/{name}/cordon", stack.operator_token, body={"reason": "replica test"}
    )
    assert status == 200 and cordoned["state"] == "cordoned"
    assert pin.startswith("berth_primary=")
    pinned = pin.split(";")[0]

    # Another client reads the replica, which has not replayed the cordon: stale, as replicas are.
    assert _state(stack, name) == "schedulable"
    # The writer, with the cookie its write set, reads its change from the primary.
    assert _state(stack, name, pinned) == "cordoned"
    reads = _reads(stack)
    assert reads.get("replica", 0) >= 1 and reads.get("pinned", 0) >= 1

    # Past the 5 s bound on lag (conftest), nobody reads the replica any more.
    time.sleep(6)
    _wait_for(lambda: _state(stack, name) == "cordoned")
    assert _reads(stack).get("lag", 0) >= 1

    stack.sql(stack.pair.standby_port, "SELECT pg_wal_replay_resume()")
    _wait_for(
        # Read first: the count can only grow by reads.
        lambda: _state(stack, name) == "cordoned" and _reads(stack).get("replica", 0) > reads["replica"]
    )


def test_a_tenants_own_booking_is_read_from_the_primary_however_stale_the_replica(replica_stack):
    stack = replica_stack
    stack.sql(stack.pair.standby_port, "SELECT pg_wal_replay_pause()")
    status, made, _ = _ask(
        stack,
        "POST",
        "/api/v1/reservations",
        stack.token,
        body={
            "tenantId": stack.tenant,
            "poolId": stack.pool,
            "devices": [{"class": "gpu", "count": 1}],
            "during": {
                "start": int(time.time() * 1000) + 86_400_000,
                "end": int(time.time() * 1000) + 90_000_000,
            },
            "wait": {"timeoutMs": 10_000},
        },
    )
    assert status == 201 and made["status"] == "placed"
    # No cookie: the tenant's own reservation is never read from the replica.
    status, again, _ = _ask(stack, "GET", f"/api/v1/reservations/{made['id']}", stack.token)
    assert status == 200 and again["status"] == "placed"
    status, listed, _ = _ask(stack, "GET", "/api/v1/reservations", stack.token)
    assert status == 200 and made["id"] in [r["id"] for r in listed["results"]]
    stack.sql(stack.pair.standby_port, "SELECT pg_wal_replay_resume()")


def test_a_stopped_replica_sends_reads_to_the_primary_and_says_so(replica_stack):
    stack = replica_stack
    name = _node(stack)
    ha._run(stack.pair, "pg_ctl", "-D", str(stack.pair.standby), "-m", "immediate", "-w", "stop")
    for _ in range(5):
        assert _state(stack, name) == "schedulable"
        status, page, _ = _ask(stack, "GET", f"/pools/{stack.pool}/", "", stack.cookie)
        assert status == 200 and name in page
    assert _reads(stack).get("down", 0) >= 1
