"""What a benchmark run cost: CPU seconds of this process, its children and Postgres; placer metrics."""

from __future__ import annotations

import os
import resource
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from django.db import connection

from metrics.store import SharedFilesCollector, metrics_dir

TICKS = os.sysconf("SC_CLK_TCK")


def _proc_cpu(pid: int, children: bool = False) -> float:
    """Return a process's user + system CPU seconds from /proc (with its reaped children's)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # After the ")" ending the command: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    utime, stime, cutime, cstime = (int(fields[i - 3]) for i in (14, 15, 16, 17))
    return (utime + stime + ((cutime + cstime) if children else 0)) / TICKS


def settle(timeout: float = 5.0) -> None:
    """Wait until this connection's is the server's only client backend, and its parent reaped the rest.

    A closed connection's backend exits a moment later; its CPU reaches the postmaster's count of
    reaped children only then.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cur:
            cur.execute(
                """SELECT count(*) FROM pg_stat_activity
                    WHERE backend_type = 'client backend' AND datname = current_database()"""
            )
            if cur.fetchone()[0] <= 1:
                break
        time.sleep(0.02)
    time.sleep(0.1)


def postgres_cpu() -> float:
    """Return the CPU seconds the database server has used: its processes now, and those it reaped.

    Every process of the cluster (backends, walwriter, checkpointer, ...) is in pg_stat_activity;
    the postmaster (their parent) also carries the CPU of the backends that have exited (of any
    database: on a shared server, run benchmarks alone).
    """
    with connection.cursor() as cur:
        # The server's own processes, and this database's backends (not other databases' clients).
        cur.execute("SELECT pid FROM pg_stat_activity WHERE datname IS NULL OR datname = current_database()")
        pids = [pid for (pid,) in cur.fetchall()]
    parents = set()
    for pid in pids:
        try:
            parents.add(int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]))
        except OSError:
            continue
    return sum(_proc_cpu(pid) for pid in pids) + sum(_proc_cpu(pid, children=True) for pid in parents)


@dataclass
class Cpu:
    """CPU seconds used so far: this process, its reaped children, and the database server."""

    own: float
    children: float
    postgres: float

    @classmethod
    def now(cls) -> Cpu:
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return cls(own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime, postgres_cpu())

    def since(self, before: Cpu) -> dict[str, float]:
        return {
            "submitter": round(self.own - before.own, 2),
            "placer": round(self.children - before.children, 2),
            "postgres": round(self.postgres - before.postgres, 2),
        }


def metric_values() -> dict[tuple[str, tuple], float]:
    """Return every sample of the shared placer metrics, by (name, sorted labels)."""
    values: dict[tuple[str, tuple], float] = defaultdict(float)
    for family in SharedFilesCollector(metrics_dir()).collect():
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] += sample.value
    return dict(values)


def batch_figures(before: dict, after: dict, placer: str) -> dict:
    """Return the batches a pool-lease run took (count, mean size, size histogram) and its lost races."""

    def delta(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0.0) - before.get(key, 0.0)

    count = delta("berth_placement_batch_size_count", placer=placer)
    total = delta("berth_placement_batch_size_sum", placer=placer)
    sizes = {}
    previous = 0.0
    for le in ("1.0", "2.0", "4.0", "8.0", "16.0", "32.0", "64.0", "128.0", "256.0", "+Inf"):
        cumulative = delta("berth_placement_batch_size_bucket", placer=placer, le=le)
        sizes[f"<={le.removesuffix('.0')}"] = int(cumulative - previous)
        previous = cumulative
    return {
        "batches": int(count),
        "mean_batch": round(total / count, 1) if count else 0.0,
        "batch_sizes": {k: v for k, v in sizes.items() if v},
        "lost_races_in_batches": int(delta("berth_placement_lost_races_total", placer=placer)),
    }
