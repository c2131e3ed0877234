"""Measure the Slurm bridge against the local cluster (`make slurm`): mirroring latency and a pass at scale."""

from __future__ import annotations

import dataclasses
import statistics
import subprocess
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from capacity import services
from capacity.conf import placer_config
from capacity.models import Quota
from capacity.rollups import refresh_rollups
from devtools import slurm_cluster
from inventory.models import Device, Node, Pool, Site, Tenant
from slurm import scontrol
from slurm.jobs import serve
from slurm.models import BridgedPool
from slurm.reconcile import run_pass

POOL = "slurm-bench"
TENANT = "slurmbench"


def _shown(name: str) -> bool:
    done = subprocess.run(
        ["scontrol", "-o", "show", "reservation", name],
        capture_output=True,
        text=True,
        env=slurm_cluster.env(),
    )
    return done.returncode == 0 and "ReservationName=" in done.stdout


def _wait(predicate, seconds: float = 30.0) -> float:
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > seconds:
            raise CommandError("Slurm did not follow within 30 s")
        time.sleep(0.005)
    return time.monotonic() - start


def _pcts(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * len(ordered)) - 1)]
    return f"p50 {statistics.median(ordered) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"


class Command(BaseCommand):
    help = (
        "Against the local Slurm cluster (make slurm): from a booking's answer to scontrol showing its reservation, "
        "and the same for a release, over --count bookings; then one reconcile pass with --scale Berth bookings and "
        "as many Slurm reservations (seconds, statements, scontrol calls)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--count", type=int, default=100)
        parser.add_argument("--scale", type=int, default=1000)

    def handle(self, *args, count: int, scale: int, **options):
        if not settings.SLURM.get("CONF"):
            settings.SLURM = {**settings.SLURM, "CONF": str(slurm_cluster.CONF)}
        if subprocess.run(["scontrol", "ping"], env=slurm_cluster.env(), capture_output=True).returncode:
            raise CommandError("no local Slurm cluster answers: run `make slurm` first")
        pool = self._pool()
        self._clear(pool)
        config = dataclasses.replace(placer_config(), random=None)
        base = timezone.now().replace(microsecond=0) + timedelta(days=1)

        def lease(i: int, gap: timedelta):
            start = base + i * gap
            data = {
                "tenantId": TENANT,
                "poolId": POOL,
                "binding": "node",
                "during": {
                    "start": int(start.timestamp() * 1000),
                    "end": int((start + gap / 2).timestamp() * 1000),
                },
            }
            return services.reserve(data, config=config).reservation

        stop = threading.Event()
        worker = threading.Thread(target=lambda: (serve(stop), connection.close()), daemon=True)
        worker.start()
        try:
            booked, released = [], []
            ids = []
            for i in range(count):
                r = lease(i, timedelta(hours=1))
                booked.append(_wait(lambda r=r: _shown(f"berth-{r.pk}")))
                ids.append(r.pk)
            for pk in ids:
                services.release(pk)
                released.append(_wait(lambda pk=pk: not _shown(f"berth-{pk}")))
        finally:
            stop.set()
            worker.join(10)
        self.stdout.write(f"booking -> scontrol shows it ({count}): {_pcts(booked)}")
        self.stdout.write(f"release -> scontrol no longer shows it ({count}): {_pcts(released)}")

        base = timezone.now().replace(microsecond=0) + timedelta(days=10)
        t = time.monotonic()
        for i in range(scale):
            lease(i // 2, timedelta(minutes=30))
        self.stdout.write(f"booked {scale} whole-node leases in {time.monotonic() - t:.1f} s")
        self._measure("first pass (creates every reservation)")
        self._measure(f"steady pass ({scale} Berth bookings, {scale} Slurm reservations, nothing to do)")
        names = sorted(r.name for r in scontrol.reservations() if r.name.startswith("berth-"))
        for name in names[:50]:
            scontrol.delete(name)
        for name in names[50:100]:
            scontrol.update(name, Accounts="drifted")
        self._measure("pass after 50 reservations deleted and 50 changed by hand in Slurm")
        self._clear(pool)

    def _measure(self, what: str) -> None:
        calls = {"n": 0}
        real = scontrol.run

        def counted(*args):
            calls["n"] += 1
            return real(*args)

        scontrol.run = counted
        connection.queries_log.clear()  # the bookings before filled Django's log of 9,000
        try:
            with CaptureQueriesContext(connection) as queries:
                t = time.monotonic()
                outcome = run_pass()
                took = time.monotonic() - t
        finally:
            scontrol.run = real
        self.stdout.write(
            f"{what}: {took:.2f} s, {len(queries)} statements, {calls['n']} scontrol calls; "
            f"{outcome.summary() or 'nothing to do'}"
        )

    def _pool(self) -> Pool:
        site, _ = Site.objects.get_or_create(slug="slurm-bench", defaults={"name": "Slurm bench"})
        pool, _ = Pool.objects.get_or_create(slug=POOL, defaults={"name": "Slurm bench", "site": site})
        tenant, _ = Tenant.objects.get_or_create(slug=TENANT, defaults={"name": "Slurm bench"})
        Quota.objects.get_or_create(tenant=tenant, resource="*", defaults={"limit": 10**9})
        for name in slurm_cluster.NODES:
            node, made = Node.objects.get_or_create(name=name, defaults={"pool": pool})
            if made:
                Device.objects.bulk_create(
                    Device(node=node, uuid=f"GPU-{name}-{i}", index=i, numa_node=i // 4) for i in range(8)
                )
        refresh_rollups([pool.pk])
        BridgedPool.objects.get_or_create(pool=pool)
        return pool

    def _clear(self, pool: Pool) -> None:
        live = pool.reservations.filter(status__in=["placed", "pending"]).values_list("pk", flat=True)
        for pk in list(live):
            services.release(pk)
        run_pass()
