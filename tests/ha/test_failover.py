"""The primary dies mid-load (SIGKILL); the standby is promoted; Berth carries on and lost nothing it acknowledged.

16 API clients book one GPU each (pool-lease placer: the worker places the queued request and
the API waits for it), release about half of what they got, and retry a 503 or a dropped answer
with the same idempotency key after Retry-After, as the 503 tells them to. A second after the
kill the standby is promoted (Patroni takes longer to decide; the promotion itself is the same).
"""

from __future__ import annotations

import http.client
import json
import random
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from devtools import ha
from devtools.bench.load import _Client

CLIENTS = 16
BEFORE_KILL = 6.0
PROMOTE_AFTER = 1.0
AFTER_PROMOTE = 8.0
GIVE_UP = 60.0


@dataclass
class Answer:
    """One booking as its client last heard it."""

    key: str
    rid: int
    status: str
    sent: float
    answered: float
    code: int
    released: bool = False


@dataclass
class Load:
    """What the clients saw, shared between their threads."""

    acks: list[Answer] = field(default_factory=list)
    unavailable: int = 0
    dropped: int = 0
    other: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, kind: str, why: str = "") -> None:
        with self.lock:
            if kind == "503":
                self.unavailable += 1
            elif kind == "dropped":
                self.dropped += 1
            else:
                self.other.append(why)


def _ask(load: Load, client: _Client, method: str, path: str, headers: dict, body: bytes, stop_by: float):
    """Send until an answer other than 503 comes (same body, so the same idempotency key)."""
    while time.monotonic() < stop_by:
        try:
            code, data = client.ask(method, path, headers, body)
        except (OSError, http.client.HTTPException):
            load.count("dropped")
            time.sleep(0.5)
            continue
        if code == 503:
            load.count("503")
            assert json.loads(data)["code"] == "UNAVAILABLE"
            time.sleep(0.5)  # Retry-After says 2 s; the clients are impatient, which is the harder case
            continue
        return code, data
    return None, b""


def _client(stack, load: Load, stop: threading.Event, seed: int) -> None:
    client, pick = _Client(stack.url), random.Random(seed)
    headers = {
        "Authorization": f"Token {stack.token}",
        "Content-Type": "application/json",
        "Host": "127.0.0.1",
    }
    while not stop.is_set():
        start = datetime.now(UTC) + timedelta(days=1, minutes=pick.randrange(0, 14 * 24 * 60))
        key = str(uuid.UUID(int=pick.getrandbits(128)))
        body = {
            "tenantId": stack.tenant,
            "poolId": stack.pool,
            "devices": [{"class": "gpu", "count": 1}],
            "during": {
                "start": int(start.timestamp() * 1000),
                "end": int(start.timestamp() * 1000) + 3_600_000,
            },
            "idempotencyKey": key,
            "wait": {"timeoutMs": 10_000},
        }
        sent = time.monotonic()
        code, data = _ask(
            load, client, "POST", "/api/v1/reservations", headers, json.dumps(body).encode(), sent + GIVE_UP
        )
        if code not in (200, 201):
            load.count("other", f"POST {code} {data[:200]!r}")
            continue
        made = json.loads(data)
        answer = Answer(key, int(made["id"]), made["status"], sent, time.monotonic(), code)
        with load.lock:
            load.acks.append(answer)
        if pick.random() < 0.5:
            code, data = _ask(
                load,
                client,
                "POST",
                f"/api/v1/reservations/{answer.rid}/release",
                headers,
                b"",
                time.monotonic() + GIVE_UP,
            )
            if code == 200:
                answer.released = True
            else:
                load.count("other", f"release {code} {data[:200]!r}")


def test_a_killed_primary_loses_nothing_acknowledged_and_berth_carries_on(stack, capsys):
    load, stop = Load(), threading.Event()
    threads = [threading.Thread(target=_client, args=(stack, load, stop, i)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    time.sleep(BEFORE_KILL)
    killed = time.monotonic()
    ha.kill_primary(stack.pair)
    time.sleep(PROMOTE_AFTER)
    ha.promote(stack.pair)
    promoted = time.monotonic()
    time.sleep(AFTER_PROMOTE)
    stop.set()
    for thread in threads:
        thread.join(timeout=GIVE_UP + 30)
    assert not any(t.is_alive() for t in threads)

    assert load.other == [], f"{load}\n{stack.server_log.read_text()[-3000:]}"
    port = stack.pair.standby_port  # the primary now
    before = [a for a in load.acks if a.answered < killed]
    assert len(before) >= CLIENTS, "the load made too few bookings before the kill to prove anything"
    # Nothing is acknowledged between the kill and the promotion, so every answer counts: each
    # booking and each release a client was told of is on the promoted server.
    rows = {
        rid: (status, allocations, bookings)
        for rid, status, allocations, bookings in stack.sql(
            port,
            """
            SELECT r.id, r.status,
                   (SELECT count(*) FROM capacity_allocation a WHERE a.reservation_id = r.id),
                   (SELECT count(*) FROM capacity_devicebooking b
                      JOIN capacity_allocation a ON a.id = b.allocation_id WHERE a.reservation_id = r.id)
              FROM capacity_reservation r WHERE r.id = ANY(%s)
            """,
            [a.rid for a in load.acks],
        )
    }
    for answer in load.acks:
        assert answer.rid in rows, f"reservation {answer.rid} was acknowledged and is gone"
        status, allocations, bookings = rows[answer.rid]
        if answer.released:
            # A release ends the allocation and deletes its bookings that had not begun.
            assert status == "released", f"reservation {answer.rid}'s release was acknowledged and is lost"
            # One still queued when its wait ran out (answered pending) never had an allocation.
            assert allocations >= 1 or answer.status != "placed"
        elif answer.status == "placed":
            assert status == "placed" and allocations >= 1 and bookings >= 1, (
                f"reservation {answer.rid} lost its allocation: {status}, {allocations}, {bookings}"
            )

    # One reservation per idempotency key: a retried create answered the first outcome.
    keys = [a.key for a in load.acks]
    stored = stack.sql(
        port,
        "SELECT idempotency_key, count(*) FROM capacity_reservation WHERE idempotency_key = ANY(%s) "
        "GROUP BY idempotency_key",
        keys,
    )
    assert len(stored) == len(set(keys)) and all(n == 1 for _, n in stored)
    assert len({a.rid for a in load.acks}) == len(load.acks)

    after = [a for a in load.acks if a.sent > killed and a.status == "placed"]
    assert after, "nothing was placed after the failover"
    first = min(a.answered for a in after)
    assert stack.worker.poll() is None, "the worker died with the primary"
    # The worker places what was queued across the failover: nothing stays queued.
    deadline = time.monotonic() + 30
    while stack.sql(port, "SELECT count(*) FROM capacity_reservation WHERE status = 'pending'")[0][0]:
        assert time.monotonic() < deadline, "queued reservations stayed queued after the failover"
        time.sleep(0.5)

    audit = stack.manage("check_capacity")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "check_capacity: no drift" in audit.stdout
    assert "lost the database" in stack.worker_log.read_text()

    report = {
        "clients": CLIENTS,
        "acknowledgedBeforeKill": len(before),
        "acknowledgedInAll": len(load.acks),
        "killToPromotedSeconds": round(promoted - killed, 2),
        "killToFirstPlacementSeconds": round(first - killed, 2),
        "answers503": load.unavailable,
        "droppedAnswers": load.dropped,
    }
    with capsys.disabled():
        print(f"\nfailover: {json.dumps(report)}", file=sys.stderr)
