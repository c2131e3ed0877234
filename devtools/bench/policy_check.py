"""Placement with a pool policy and an outside check, against no policy, in one run (bench_placements --policy-check).

Three phases on the same pool, each on an emptied pool and the same seeded requests: no policy;
the policy's limits and approvals (none reached); the same plus an outside check on 127.0.0.1
that answers 204 after `delay_ms`. Each phase places from `clients` threads, so the figures say
whether the check's wait is spent holding anything (it must not be: it runs before any lock).
"""

from __future__ import annotations

import http.server
import threading
import time
from datetime import timedelta

from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from capacity import services
from capacity.audit import audit, booking_drift
from capacity.conf import placer_config
from capacity.models import Allocation, DeviceBooking, Reservation
from capacity.services import lookups
from devtools.bench.placements import build_pool, requests_for
from policy.models import PoolPolicy
from policy.pool_policy import set_policy


def _server(delay_ms: float) -> http.server.ThreadingHTTPServer:
    """Start an outside check on 127.0.0.1 answering 204 after `delay_ms`, in threads of this process."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            time.sleep(delay_ms / 1000)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True, name="bench-check").start()
    return server


def _empty(pool) -> None:
    with transaction.atomic():
        reservations = Reservation.objects.filter(pool=pool)
        DeviceBooking.objects.filter(allocation__node__pool=pool).delete()
        Allocation.objects.filter(reservation__in=reservations).delete()
        reservations.delete()


def _phase(per_client: list[list[dict]], config) -> dict:
    """Place every client's requests from its own thread; return throughput, latency and statements."""
    latencies: list[float] = []
    placed = [0]
    errors: list[str] = []
    lock = threading.Lock()

    def client(requests: list[dict]) -> None:
        try:
            for data in requests:
                started = time.perf_counter()
                try:
                    result = services.reserve(data, config=config)
                except Exception as exc:  # counted, not raised: the run goes on and says so
                    with lock:
                        errors.append(f"{type(exc).__name__}: {exc}")
                    continue
                took = (time.perf_counter() - started) * 1000
                with lock:
                    latencies.append(took)
                    placed[0] += result.reservation.status == "placed"
        finally:
            connections.close_all()

    # Two requests first on this thread: the second's statements are a warm request's.
    services.reserve(per_client[0][0], config=config)
    with CaptureQueriesContext(connection) as seen:
        services.reserve(per_client[0][1], config=config)
    statements = len(seen.captured_queries)
    threads = [
        threading.Thread(target=client, args=(reqs[2:] if i == 0 else reqs,))
        for i, reqs in enumerate(per_client)
    ]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - started
    latencies.sort()
    return {
        "placements_per_s": round(len(latencies) / seconds, 1),
        "placed": placed[0] + 2,
        "p50_ms": round(latencies[len(latencies) // 2], 1) if latencies else None,
        "p95_ms": round(latencies[int(len(latencies) * 0.95)], 1) if latencies else None,
        "statements_per_request": statements,
        "errors": errors[:5],
    }


def run_policy_check(nodes: int, count: int, clients: int, seed: int, delay_ms: float, progress=None) -> dict:
    """Run the three phases and return their figures (see the module's docstring)."""
    pool = build_pool(nodes, clients, progress=progress)
    config = placer_config()
    per_client = requests_for(seed, count, pool.slug, clients)
    server = _server(delay_ms)
    url = f"http://127.0.0.1:{server.server_address[1]}/check"
    limits = {
        "max_duration": timedelta(days=7),
        "max_lead_time": timedelta(days=30),
        "max_future_gpu_hours": 10**8,
        "approval_above_gpu_hours": 10**8,
    }
    figures: dict = {"nodes": nodes, "requests": count, "clients": clients, "check_delay_ms": delay_ms}
    try:
        for name, policy in (
            ("no_policy", None),
            ("policy", limits),
            ("policy_and_check", {**limits, "policy_webhook": url, "policy_webhook_on_error": "deny"}),
        ):
            _empty(pool)
            PoolPolicy.objects.filter(pool=pool).delete()
            if policy is not None:
                set_policy(pool.slug, policy)
            lookups.forget_all()
            figures[name] = _phase(per_client, config)
    finally:
        server.shutdown()
        server.server_close()
        PoolPolicy.objects.filter(pool=pool).delete()
    figures["double_booked"] = len([line for line in booking_drift() if "overlap" in line])
    figures["drift"] = len(audit())
    figures["errors"] = [e for k in ("no_policy", "policy", "policy_and_check") for e in figures[k]["errors"]]
    return figures
