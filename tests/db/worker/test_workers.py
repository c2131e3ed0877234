"""Two `manage.py run_placer` processes on one database share the pool-lease queue, and survive a death.

The workers are real OS processes pointed at the test database through DATABASE_URL. Each pool has
one placer at a time (an advisory lock); a worker killed in the middle of a batch loses only its
transaction, and the other worker places that pool's queue.
"""

import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from capacity import services
from capacity.audit import audit
from capacity.conf import placer_config
from capacity.db.channels import PLACER_LOCK_CLASS
from capacity.models import DeviceBooking, Reservation
from capacity.models.reservations import QUEUED
from inventory.models import Pool

from databases import this_database_url

pytestmark = pytest.mark.django_db(transaction=True)

POOLS = 4
GPUS = 8  # per pool: 2 nodes × 4 GPUs
SLOTS = 2  # one-hour windows per pool per wave, each asked by GPUS + 2 requests of one GPU
ASKED = GPUS + 2
HOUR = timedelta(hours=1)


class Worker:
    """`manage.py run_placer` in its own process, its output kept line by line."""

    def __init__(self, name: str):
        self.name = name
        env = {
            **os.environ,
            "DATABASE_URL": this_database_url(name),
            "BERTH_PLACER": "pool-lease",
            "PYTHONUNBUFFERED": "1",  # lines arrive as written, even from a worker killed later
        }
        self.process = subprocess.Popen(
            # Housekeeping only at start: what wakes a worker is the queue, or a pool it found held.
            [sys.executable, "manage.py", "run_placer", "--interval", "600"],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self.readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, self.err), daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(stream, lines):
        for line in stream:
            lines.append(line.rstrip("\n"))

    @property
    def pid(self) -> int:
        return self.process.pid

    def batched(self, since: int = 0) -> int:
        """Return how many reservations this worker's batches took (placed or pending) in out[since:]."""
        total = 0
        for line in self.out[since:]:
            if line.startswith("batched "):
                placed, pending = (int(w) for w in line.split() if w.isdigit())
                total += placed + pending
        return total

    def wait_ready(self, deadline: float) -> None:
        while not any(line.startswith("run_placer: pool-lease placer") for line in self.out):
            assert self.process.poll() is None, f"{self.name} exited: {self.err}"
            assert time.monotonic() < deadline, f"{self.name} did not start: {self.err}"
            time.sleep(0.02)

    def stop(self) -> int:
        """SIGTERM, as `make run` or a process manager stops it; return its exit code."""
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(20)
        for reader in self.readers:
            reader.join(5)
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()  # SIGKILL: a stopped process dies of it too
        self.process.wait(20)


def lock_holders() -> dict[str, set[int]]:
    """Return application name -> pks of the pools whose placer lock its connection holds now.

    pg_locks covers the whole server: other test runs' workers bear the same names.
    """
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT a.application_name, l.objid::bigint
              FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.classid::bigint = %s
               AND a.datname = current_database()
            """,
            [PLACER_LOCK_CLASS],
        )
        held: dict[str, set[int]] = {}
        for name, pool_pk in cur.fetchall():
            held.setdefault(name, set()).add(pool_pk)
        return held


def queued(**filters) -> int:
    return Reservation.objects.filter(QUEUED, **filters).count()


def drain(workers, deadline: float, seen: dict[str, set[int]]) -> None:
    """Wait for an empty queue, noting which worker held which pool's lock meanwhile."""
    while queued():
        for name, pools in lock_holders().items():
            seen.setdefault(name, set()).update(pools)
        for w in workers:
            assert w.process.poll() is None, f"{w.name} exited: {w.err}"
        assert time.monotonic() < deadline, f"the queue never drained: {queued()} left"
        time.sleep(0.002)


def eventually(condition, seconds: float, message) -> None:
    """Wait for `condition()`: a worker reports a round after its commits, so a little after them."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, message()
        time.sleep(0.01)


def test_two_worker_processes_share_the_pools_and_one_takes_over_when_the_other_is_killed(
    tenant, site, make_node
):
    pools = [Pool.objects.create(slug=f"pool-{p}", name=f"Pool {p}", site=site) for p in range(POOLS)]
    for pool in pools:
        for n in range(2):
            make_node(f"{pool.slug}-node-{n}", gpus=GPUS // 2, pool=pool)
    lease = dataclasses.replace(placer_config(), placer="pool-lease")
    day = timezone.now().replace(minute=0, second=0, microsecond=0) + timedelta(days=1)
    windows: list = []

    def queue_wave() -> None:
        """Queue ASKED one-GPU requests per pool and window, in one transaction: they land at once."""
        wave = [day + (len(windows) + s) * HOUR for s in range(SLOTS)]
        windows.extend(wave)
        with transaction.atomic():
            for start in wave:
                for pool in pools:
                    for _ in range(ASKED):
                        data = {
                            "tenantId": tenant.slug,
                            "poolId": pool.slug,
                            "devices": [{"class": "gpu", "count": 1}],
                            "during": {
                                "start": int(start.timestamp() * 1000),
                                "end": int((start + HOUR).timestamp() * 1000),
                            },
                        }
                        assert services.is_queued(services.reserve(data, config=lease).reservation)

    started = time.monotonic()
    a, b = Worker("berth-worker-a"), Worker("berth-worker-b")
    seen: dict[str, set[int]] = {}
    try:
        a.wait_ready(started + 30)
        b.wait_ready(started + 30)

        # 1. Both wake on the same notification; the one that finds a pool held moves on to the next.
        for _ in range(3):
            queue_wave()
            drain([a, b], time.monotonic() + 20, seen)
            # Every queued reservation went through exactly one batch, and its worker says so.
            eventually(
                lambda: a.batched() + b.batched() == Reservation.objects.count(),
                10,
                lambda: (a.out, b.out),
            )
            if a.batched() and b.batched():
                break
        assert a.batched() > 0 and b.batched() > 0, (a.out, b.out, seen)

        # 2. Freeze worker A while it holds a pool's lock with its batch uncommitted, then kill it.
        frozen = None
        deadline = time.monotonic() + 20
        while frozen is None:
            assert time.monotonic() < deadline, "never caught worker A in the middle of a batch"
            if not queued():
                queue_wave()
            if a.name not in lock_holders():
                time.sleep(0.001)
                continue
            os.kill(a.pid, signal.SIGSTOP)
            time.sleep(0.2)  # whatever A had sent has run: a lock still held is an open batch
            held = lock_holders().get(a.name, set())
            frozen = next((pk for pk in held if queued(pool_id=pk)), None)
            if frozen is None:
                os.kill(a.pid, signal.SIGCONT)
        stuck = queued(pool_id=frozen)
        # B keeps placing the other pools, and leaves the held one alone (one placer per pool)...
        time.sleep(1.5)
        assert queued(pool_id=frozen) == stuck
        assert lock_holders().get(a.name) == {frozen}
        b_before_kill = len(b.out)
        a.kill()
        assert a.process.returncode == -signal.SIGKILL
        # ...until A's connection is gone: its batch rolls back and B places that pool's queue, at
        # once (no notification comes for it, and B's next housekeeping round is minutes away).
        drain([b], time.monotonic() + 5, seen)
        eventually(lambda: b.batched(since=b_before_kill) >= stuck, 10, lambda: b.out)

        # 3. Nothing lost or booked twice: each window of each pool holds GPUS placements.
        total = len(windows) * POOLS * ASKED
        assert Reservation.objects.count() == total
        assert set(Reservation.objects.values_list("status", flat=True)) == {"placed", "pending"}
        for pool in pools:
            for start in windows:
                placed = Reservation.objects.filter(pool=pool, starts_at=start, status="placed").count()
                assert placed == GPUS, (pool.slug, start, placed)
        assert DeviceBooking.objects.count() == len(windows) * POOLS * GPUS
        assert audit() == []

        assert b.stop() == 0
        assert b.out[-1] == "run_placer: stopped"
        assert b.err == []
    finally:
        a.kill()
        b.kill()
