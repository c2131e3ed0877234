"""Build a benchmark pool and place a seeded stream of requests into it (for bench_placements)."""

from __future__ import annotations

import dataclasses
import multiprocessing
import random
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from capacity import services
from capacity.audit import audit, booking_drift
from capacity.conf import placer_config
from capacity.models import Allocation, DeviceBooking, MaintenanceWindow, Quota, Reservation
from capacity.models.quota import DEFAULT_RESOURCE
from capacity.models.reservations import QUEUED
from capacity.placers.batch import place_queued
from capacity.placers.types import POOL_LEASE
from capacity.rollups import refresh_rollups
from capacity.worker import serve
from devtools.bench.cpu import Cpu, batch_figures, metric_values, settle
from inventory.models import Device, DeviceLink, Node, NodeLabel, NodeResource, Pool, Site, Tenant
from maintenance.windows import schedule
from policy.models import PoolShare
from policy.shares import bookable_gpus
from usage.booked_hours import fold_booked_hours

BENCH_QUOTA = 1_000_000_000
# Nodes inserted per transaction when a benchmark pool is built (bulk inserts: the pool's
# generation is bumped once per statement).
BUILD_CHUNK = 250
SIZES = (1, 2, 4, 8)
SIZE_WEIGHTS = (0.4, 0.3, 0.2, 0.1)


def _pcie_rank(a: int, b: int) -> str:
    if a // 4 != b // 4:
        return "SYS"
    return "PIX" if a // 2 == b // 2 else "PXB"


def build_pool(nodes: int, clients: int, *, progress=None, shares: int = 0) -> Pool:
    """Create (or reset) pool `bench-<nodes>`: two thirds NVLink boards, one third PCIe boxes.

    With `shares`, that many tenants share the pool evenly (guarantees of its GPUs over `shares`,
    no borrowing or lending limits); without, it has no shares.
    """
    slug = f"bench-{nodes}"
    site, _ = Site.objects.get_or_create(slug="bench", defaults={"name": "Benchmark"})
    pool, _ = Pool.objects.get_or_create(slug=slug, defaults={"name": f"Benchmark {nodes}", "site": site})
    for i in range(max(clients, shares, 1)):
        tenant, _ = Tenant.objects.get_or_create(slug=f"bench-{i}", defaults={"name": f"Bench tenant {i}"})
        # Quota is checked on every placement; the benchmark's tenants get a default no run reaches.
        Quota.objects.get_or_create(tenant=tenant, resource=DEFAULT_RESOURCE, defaults={"limit": BENCH_QUOTA})
    # The last run's statistics predate its bookings; planned on them, the deletes below took
    # minutes on the PostgreSQL 15 server.
    _analyze_filled(["capacity_devicebooking", "capacity_allocation", "capacity_reservation"])
    with transaction.atomic():
        reservations = Reservation.objects.filter(pool=pool)
        DeviceBooking.objects.filter(allocation__node__pool=pool).delete()
        Allocation.objects.filter(node__pool=pool).delete()
        Allocation.objects.filter(reservation__in=reservations).delete()
        reservations.delete()
        # Quota charges and scalar claims go with their reservations and allocations.
        MaintenanceWindow.objects.filter(window_nodes__node__pool=pool).delete()  # a --windows run's
    existing = Node.objects.filter(pool=pool).count()
    chunks = [range(i, min(i + BUILD_CHUNK, nodes)) for i in range(existing, nodes, BUILD_CHUNK)]
    for chunk in progress(chunks) if progress else chunks:
        # Bulk inserts, a chunk of nodes per transaction: 10,000 nodes in well under a minute.
        with transaction.atomic():
            _build_nodes(pool, slug, chunk)
    with transaction.atomic():
        refresh_rollups([pool.pk])
        PoolShare.objects.filter(pool=pool).delete()
        if shares:
            each = int(bookable_gpus(pool)) // shares
            PoolShare.objects.bulk_create(
                PoolShare(pool=pool, tenant=Tenant.objects.get(slug=f"bench-{i}"), guaranteed_gpus=each)
                for i in range(shares)
            )
    # The booked-hours changes folded, as the worker does every minute; dead rows vacuumed and
    # statistics fresh, as autovacuum would leave a long-lived pool. The PostgreSQL 15 server here
    # runs without autovacuum: unvacuumed, each run's deletes left the next one slower (2026-12-07).
    fold_booked_hours()
    _analyze_filled(vacuum=True)
    return pool


def _analyze_filled(tables: list[str] | None = None, *, vacuum: bool = False) -> None:
    """ANALYZE (or VACUUM ANALYZE) the tables (default: all of Berth's) that hold rows; leave empty
    ones never analyzed. VACUUM cannot run in a transaction: inside a test's, ANALYZE alone.

    Analyzed while empty, a table is planned as empty: the placer's generic plans and foreign-key
    checks, made in its first milliseconds, then scanned the bookings a fresh database's first run
    wrote (the commit statement took 1.5 ms instead of 0.4). Never analyzed, Postgres plans a new
    table as ten pages at least, as it does after `migrate`.
    """
    vacuum = vacuum and not connection.in_atomic_block  # a test's transaction: ANALYZE alone
    with connection.cursor() as cur:
        if tables is None:
            tables = [
                t
                for t in connection.introspection.table_names(cur)
                if t.startswith(("capacity_", "inventory_"))
            ]
        for table in tables:
            cur.execute(f"SELECT EXISTS (SELECT 1 FROM {connection.ops.quote_name(table)})")
            if cur.fetchone()[0]:
                cur.execute(
                    f"{'VACUUM (ANALYZE)' if vacuum else 'ANALYZE'} {connection.ops.quote_name(table)}"
                )


def _build_nodes(pool: Pool, slug: str, numbers: range) -> None:
    """Insert nodes `numbers` of the pool with 8 GPUs, their links, scalars and capability label."""
    made = Node.objects.bulk_create(Node(name=f"{slug}-{i:05d}", pool=pool) for i in numbers)
    devices = []
    for i, node in zip(numbers, made, strict=True):
        nv = i % 3 != 2
        devices.extend(
            Device(
                node=node,
                uuid=f"GPU-{slug}-{i:05d}-{g}",
                index=g,
                numa_node=g // 4,
                attributes={
                    "gpuProduct": "H100-SXM5-80GB" if nv else "L40S-48GB",
                    "vramGiB": 80 if nv else 48,
                },
            )
            for g in range(8)
        )
    devices = Device.objects.bulk_create(devices)
    links = []
    for n, (i, node) in enumerate(zip(numbers, made, strict=True)):
        nv = i % 3 != 2
        gpus = devices[n * 8 : n * 8 + 8]
        links.extend(
            DeviceLink(node=node, device_a=gpus[a], device_b=gpus[b], rank="NV" if nv else _pcie_rank(a, b))
            for a in range(8)
            for b in range(a + 1, 8)
        )
    DeviceLink.objects.bulk_create(links, batch_size=5000)
    NodeResource.objects.bulk_create(
        NodeResource(node=node, resource=resource, allocatable=amount, ratio=1.0)
        for node in made
        for resource, amount in (("vcpu", 224), ("memoryGiB", 2048))
    )
    NodeLabel.objects.bulk_create(
        NodeLabel(node=node, key="bc.dev/cap.devices.limits", value="1", source="system") for node in made
    )


@dataclass
class Stream:
    """What one client placed: latencies in ms and outcomes."""

    latencies: list[float] = field(default_factory=list)
    placed: int = 0
    pending: int = 0
    lost: int = 0
    errors: list[str] = field(default_factory=list)


def requests_for(
    seed: int, count: int, pool: str, clients: int, tenants: int | None = None
) -> list[list[dict]]:
    """Return per-client request lists: sizes weighted 0.4/0.3/0.2/0.1, windows within two weeks.

    Client i books as tenant bench-<i mod tenants> (a tenant per client unless `tenants` says);
    with more tenants than clients, each client's requests go round the tenants.
    """
    tenants = tenants or clients
    rng = random.Random(seed)
    now = timezone.now().replace(microsecond=0)
    per_client: list[list[dict]] = [[] for _ in range(clients)]
    for n in range(count):
        gpus = rng.choices(SIZES, SIZE_WEIGHTS)[0]
        start = now + timedelta(hours=rng.randrange(0, 14 * 24))
        end = start + timedelta(hours=rng.choice((4, 12, 24, 48, 72)))
        per_client[n % clients].append(
            {
                "tenantId": f"bench-{(n // clients if tenants > clients else n % clients) % tenants}",
                "poolId": pool,
                "devices": [{"class": "gpu", "count": gpus}],
                "resources": {"vcpu": 16 * gpus, "memoryGiB": 128 * gpus},
                "during": {"start": int(start.timestamp() * 1000), "end": int(end.timestamp() * 1000)},
            }
        )
    return per_client


def schedule_windows(pool: Pool, count: int, seed: int) -> None:
    """Schedule `count` 12-hour maintenance windows on seeded nodes of the pool within two weeks."""
    rng = random.Random(seed + 7)
    names = sorted(Node.objects.filter(pool=pool).values_list("name", flat=True))
    now = timezone.now().replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    for _ in range(count):
        start = now + timedelta(hours=rng.randrange(0, 14 * 24))
        body = {
            "nodes": [rng.choice(names)],
            "start": start.isoformat(),
            "end": (start + timedelta(hours=12)).isoformat(),
        }
        schedule(body, by="bench")


def _inside_windows(pool: Pool) -> int:
    """Return how many live allocations of the pool overlap a maintenance window of their node (0)."""
    with connection.cursor() as cur:
        cur.execute(
            """SELECT count(*) FROM capacity_allocation a
                 JOIN inventory_node n ON n.id = a.node_id
                 JOIN capacity_maintenancewindownode w ON w.node_id = a.node_id
                WHERE n.pool_id = %s AND a.released_at IS NULL
                  AND a.starts_at < w.ends_at AND a.ends_at > w.starts_at""",
            [pool.pk],
        )
        return cur.fetchone()[0]


def _placer_worker(config, stop) -> None:
    """Run the pool-lease worker (no housekeeping) until told to stop and nothing is left."""
    code = 0
    try:
        with override_settings(DEBUG=False):
            serve(config, interval=None, stop=stop)
    except Exception:
        traceback.print_exc()
        code = 1
    finally:
        connection.close()
    raise SystemExit(code)


def run(
    nodes: int,
    count: int,
    clients: int,
    seed: int,
    previews: int,
    progress=None,
    placer: str = "inline",
    one_tenant: bool = False,
    shares: int = 0,
    windows: int = 0,
) -> dict:
    """Build the pool, place the stream, and return the figures.

    With `windows`, that many 12-hour maintenance windows (one node each, seeded) are scheduled
    over the stream's two weeks first: placements then plan around them.

    With the pool-lease placer, clients only queue their requests; a placer process (forked, so
    it shares this process's settings) places them in batches, and the clock stops when the last
    one has left the queue.
    """
    pool = build_pool(nodes, clients, progress=progress, shares=shares)
    if windows:
        schedule_windows(pool, windows, seed)
    config = dataclasses.replace(placer_config(), placer=placer)
    batching = placer == POOL_LEASE
    streams = [Stream() for _ in range(clients)]
    tenants = shares or (1 if one_tenant else clients)
    plans = requests_for(seed, count, pool.slug, clients, tenants)

    # Queries per placement, counted on a separate warm-up sample so the timed run is not slowed.
    sample = requests_for(seed + 1, config.max_batch if batching else 20, pool.slug, 1, tenants)[0]
    with CaptureQueriesContext(connection) as queries:
        for data in sample:
            services.reserve(data, config=config)
        if batching:
            place_queued(config)
    query_count = len(queries.captured_queries) / len(sample)

    stop = placer_process = None
    if batching:
        # Fork before any client thread exists, with no connection open to inherit.
        connections.close_all()
        context = multiprocessing.get_context("fork")
        stop = context.Event()
        placer_process = context.Process(target=_placer_worker, args=(config, stop), daemon=True)
        placer_process.start()

    barrier = threading.Barrier(clients)

    def client(i: int) -> None:
        stream = streams[i]
        try:
            barrier.wait()
            for data in plans[i]:
                t0 = time.perf_counter()
                result = services.reserve(data, config=config)
                stream.latencies.append((time.perf_counter() - t0) * 1000)
                if result.reservation.status == "placed":
                    stream.placed += 1
                    stream.lost += len(result.outcome.lost)
                elif not batching:
                    stream.pending += 1
        except Exception as err:  # reported in the figures, never swallowed
            stream.errors.append(repr(err))
        finally:
            connection.close()

    # Timed as served in production: without DEBUG's query log, which formats every statement.
    cpu_before, metrics_before = Cpu.now(), metric_values()
    with override_settings(DEBUG=False):
        started = time.perf_counter()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if batching:
            while Reservation.objects.filter(QUEUED, pool=pool).exists() and placer_process.is_alive():
                time.sleep(0.005)
        elapsed = time.perf_counter() - started
    queue_ms: list[float] = []
    if batching:
        stop.set()
        placer_process.join(60)
        if placer_process.exitcode != 0:
            streams[0].errors.append(f"the placer process exited with {placer_process.exitcode}")
        streams[0].placed, streams[0].pending, queue_ms = _batched(pool, count)
    # After the join: the placer process's CPU is counted with this one's reaped children.
    settle()
    cpu = Cpu.now().since(cpu_before)
    batches = batch_figures(metrics_before, metric_values(), POOL_LEASE) if batching else {}

    preview_ms = []
    explain_ms = []
    with override_settings(DEBUG=False):
        for data in requests_for(seed + 2, previews, pool.slug, 1)[0]:
            t0 = time.perf_counter()
            services.preview(data)
            preview_ms.append((time.perf_counter() - t0) * 1000)
        for data in requests_for(seed + 3, max(previews // 4, 1), pool.slug, 1)[0]:
            t0 = time.perf_counter()
            services.preview(data, explain=True)
            explain_ms.append((time.perf_counter() - t0) * 1000)

    latencies = sorted(x for s in streams for x in s.latencies)
    double = [line for line in booking_drift() if "overlap" in line]
    inside = _inside_windows(pool) if windows else 0
    drift = audit()
    return {
        "placer": placer,
        "nodes": nodes,
        "clients": clients,
        "tenants": tenants,
        "shares": shares,
        "windows": windows,
        "placed_inside_windows": inside,
        "borrowing": Reservation.objects.filter(pool=pool, borrowed_gpus__gt=0).count(),
        "requests": count,
        "placed": sum(s.placed for s in streams),
        "pending": sum(s.pending for s in streams),
        "lost_races": sum(s.lost for s in streams),
        "errors": [e for s in streams for e in s.errors],
        "seconds": round(elapsed, 3),
        "placements_per_s": round(count / elapsed, 1),
        "p50_ms": round(_pct(latencies, 50), 2),
        "p95_ms": round(_pct(latencies, 95), 2),
        "queries_per_placement": round(query_count, 1),
        # CPU seconds of the timed run: the clients (with the inline placer, the placing too), the
        # pool-lease placer process, and every Postgres process; and their sum per request.
        "cpu_s": cpu,
        "cpu_ms_per_request": round(sum(cpu.values()) * 1000 / count, 2),
        **batches,
        "preview_p50_ms": round(_pct(sorted(preview_ms), 50), 2),
        "preview_explain_p50_ms": round(_pct(sorted(explain_ms), 50), 2),
        # pool-lease: from queued to placed (the latencies above are the clients' queue calls)
        "queued_p50_ms": round(_pct(queue_ms, 50), 2),
        "queued_p95_ms": round(_pct(queue_ms, 95), 2),
        "double_booked": len(double),
        "drift": len(drift),
    }


def _batched(pool: Pool, count: int) -> tuple[int, int, list[float]]:
    """Return the timed stream's placed and pending counts and queued-to-decided times (ms)."""
    rows = list(
        Reservation.objects.filter(pool=pool)
        .order_by("-pk")
        .values_list("status", "created_at", "updated_at")[:count]
    )
    placed = sum(status == Reservation.Status.PLACED for status, _, _ in rows)
    waits = sorted((updated - created).total_seconds() * 1000 for _, created, updated in rows)
    return placed, len(rows) - placed, waits


def _pct(values: list[float], p: int) -> float:
    if not values:
        return 0.0
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]
