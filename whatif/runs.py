"""What-if runs from the page: check and queue an operator's inputs; the worker runs them one by one.

A person may have MAX_WAITING_PER_USER runs queued or running and a pool MAX_WAITING_PER_POOL:
one operator cannot fill the queue for everyone. A run stops after MAX_RUN_SECONDS.

A run's inputs are kept as the form gave them, so a past run can be read (and run again) as it
was asked. The worker takes the oldest queued run (SKIP LOCKED: several workers share the queue)
and runs it in a process of its own, which writes its progress every few per cent and keeps the
result or the error. A run the worker was
killed in the middle of is taken up again after STALE_AFTER.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from capacity.port import (
    INVALID_INPUT,
    AnyReservation,
    CapacityError,
    PoolRow,
    load_pool,
    pool_index,
    survive,
)
from config.errors import THROTTLED

from .changes import Changes, changed_index
from .demand import Synthetic
from .models import WhatIfRun
from .shares import check_shares
from .simulation import MAX_REQUESTS, Inputs, check, share_capacity, simulate

log = logging.getLogger(__name__)
IDLE_POLL = 2.0  # seconds between looks at the queue when it is empty
STALE_AFTER = timedelta(minutes=15)  # a running run not heard of for this long is taken up again
PROGRESS_STEP = 2  # per cent between progress writes
MAX_WAITING_PER_USER = 3  # runs one person may have queued or running, in all pools
MAX_WAITING_PER_POOL = 5  # runs one pool may have queued or running, anyone's
# The longest a run may take: 100,000 requests on 1,000 nodes with few waits take about 5 minutes
# (docs/benchmarks.md); a run that waits a lot may take far longer and is stopped.
MAX_RUN_SECONDS = 600
KILL_GRACE = 60  # seconds the worker gives a run's process past MAX_RUN_SECONDS to stop itself
# pg_advisory_xact_lock(class, 0) while runs are counted and queued: two at once cannot both pass.
QUEUE_LOCK_CLASS = 0x57484946  # "WHIF"


def stored(inputs: Inputs) -> dict:
    """Return the inputs as a run keeps them (JSON)."""
    s, c = inputs.synthetic, inputs.changes
    return {
        "pool": inputs.pool,
        "since": inputs.since.isoformat() if inputs.since else None,
        "until": inputs.until.isoformat() if inputs.until else None,
        "synthetic": None
        if s is None
        else {
            "count": s.count,
            "perHour": s.per_hour,
            "mix": [list(pair) for pair in s.mix],
            "gangShare": s.gang_share,
            "meanHours": s.mean_hours,
            "spotShare": s.spot_share,
        },
        "add": [list(pair) for pair in c.add],
        "remove": list(c.remove),
        "restore": list(c.restore),
        "weights": dict(c.weights) if c.weights else None,
        "topN": c.top_n,
        "placer": c.placer,
        "shares": [list(spec) for spec in c.shares],
        "seed": inputs.seed,
        "horizonDays": inputs.horizon_days,
    }


def from_stored(data: dict) -> Inputs:
    """Return the inputs a run keeps."""
    s = data["synthetic"]
    return Inputs(
        pool=data["pool"],
        since=datetime.fromisoformat(data["since"]) if data["since"] else None,
        until=datetime.fromisoformat(data["until"]) if data["until"] else None,
        synthetic=None
        if s is None
        else Synthetic(
            count=s["count"],
            seed=data["seed"],
            per_hour=s["perHour"],
            mix=tuple((int(n), float(w)) for n, w in s["mix"]),
            gang_share=s["gangShare"],
            mean_hours=s["meanHours"],
            spot_share=s["spotShare"],
        ),
        changes=Changes(
            add=tuple((shape, int(n)) for shape, n in data["add"]),
            remove=tuple(data["remove"]),
            restore=tuple(data.get("restore", ())),  # runs kept from before --restore-nodes
            weights=data["weights"],
            top_n=data["topN"],
            placer=data["placer"],
            shares=tuple(tuple(spec) for spec in data.get("shares", ())),  # runs kept from before --shares
        ),
        seed=data["seed"],
        horizon_days=data["horizonDays"],
    )


def validate(inputs: Inputs) -> PoolRow:
    """Return the run's pool, or raise CapacityError for inputs a run would refuse (without running it)."""
    check(inputs)
    pool = load_pool(inputs.pool)
    if pool is None:
        raise CapacityError(INVALID_INPUT, f"pool: no pool {inputs.pool!r}")
    changed = changed_index(pool_index(pool), pool.view, inputs.changes)  # unknown nodes, too many nodes
    check_shares(inputs.changes.shares, share_capacity(changed))  # unknown tenants, too much guaranteed
    if inputs.since is not None:
        found = AnyReservation.objects.filter(
            pool_id=pool.pk, created_at__gte=inputs.since, created_at__lt=inputs.until
        ).count()
        if not found:
            raise CapacityError(
                INVALID_INPUT, "--from/--to: no reservation was created in the pool in that period"
            )
        if found > MAX_REQUESTS:
            raise CapacityError(INVALID_INPUT, f"--from/--to: more than {MAX_REQUESTS:,} reservations")
    return pool


def queue(inputs: Inputs, user) -> WhatIfRun:
    """Check the inputs and queue a run for the worker; nothing is queued when they are refused.

    Raises THROTTLED when the user or the pool has as many runs queued or running as allowed.
    """
    pool = validate(inputs)  # outside the lock: on a large pool it reads for a while
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s, 0)", [QUEUE_LOCK_CLASS])
        waiting = WhatIfRun.objects.filter(status__in=(WhatIfRun.Status.QUEUED, WhatIfRun.Status.RUNNING))
        mine = waiting.filter(created_by=user).count()
        if mine >= MAX_WAITING_PER_USER:
            raise CapacityError(
                THROTTLED,
                f"You have {mine} what-if runs queued or running, the most one person may have "
                f"({MAX_WAITING_PER_USER}): wait for one to finish.",
            )
        in_pool = waiting.filter(pool_id=pool.pk).count()
        if in_pool >= MAX_WAITING_PER_POOL:
            raise CapacityError(
                THROTTLED,
                f"{inputs.pool} has {in_pool} what-if runs queued or running, the most a pool may have "
                f"({MAX_WAITING_PER_POOL}): wait for one to finish.",
            )
        return WhatIfRun.objects.create(pool_id=pool.pk, created_by=user, inputs=stored(inputs))


def claim() -> WhatIfRun | None:
    """Take the oldest queued run (or one left running by a worker that died) and mark it running."""
    with transaction.atomic():
        run = (
            WhatIfRun.objects.select_for_update(skip_locked=True)
            .filter(
                Q(status=WhatIfRun.Status.QUEUED)
                | Q(status=WhatIfRun.Status.RUNNING, started_at__lt=timezone.now() - STALE_AFTER)
            )
            .order_by("created_at", "id")
            .first()
        )
        if run is None:
            return None
        run.status, run.started_at, run.progress = WhatIfRun.Status.RUNNING, timezone.now(), 0
        run.save(update_fields=["status", "started_at", "progress"])
        return run


def execute(run: WhatIfRun) -> str:
    """Run a claimed run to its end, writing its progress; keep the result or the refusal."""
    written = [0]
    inputs = from_stored(run.inputs)
    sides = 2 if inputs.changes else 1
    deadline = time.monotonic() + MAX_RUN_SECONDS

    def progress(side: str, done: int, total: int) -> None:
        if time.monotonic() > deadline:
            raise _TooLong
        share = (done + (total if side == "changed" else 0)) * 100 // (total * sides)
        if share >= written[0] + PROGRESS_STEP:
            written[0] = share
            # Also tells others this run is alive (started_at moves with it).
            WhatIfRun.objects.filter(pk=run.pk).update(progress=min(99, share), started_at=timezone.now())

    try:
        result = simulate(inputs, progress)
    except CapacityError as err:
        _finish(run, WhatIfRun.Status.FAILED, error=f"{err.code}: {err.message}"[:500])
        return f"what-if #{run.pk} refused: {err.message}"
    except _TooLong:
        _finish(run, WhatIfRun.Status.FAILED, error=TOO_LONG)
        return f"what-if #{run.pk} stopped after {MAX_RUN_SECONDS} s"
    _finish(run, WhatIfRun.Status.DONE, result=result)
    return f"what-if #{run.pk} done"


class _TooLong(Exception):
    """A run went past MAX_RUN_SECONDS."""


TOO_LONG = (
    f"stopped after {MAX_RUN_SECONDS // 60} minutes, the longest a run may take: "
    "ask for fewer requests, a shorter period or fewer added nodes"
)


def run_once() -> str:
    """Run the next run here, in this process (`run_placer --once`); say what was done."""
    run = claim()
    return execute(run) if run is not None else ""


def _finish(run: WhatIfRun, status: str, result: dict | None = None, error: str = "") -> None:
    WhatIfRun.objects.filter(pk=run.pk).update(
        status=status, result=result, error=error, progress=100, finished_at=timezone.now()
    )


def serve(stop: threading.Event) -> None:
    """Run queued runs until `stop`, each in a process of its own; look every IDLE_POLL seconds.

    A run is minutes of pure Python: in the worker's own process it would hold the interpreter
    lock against the placer's threads, so it runs as `manage.py whatif_run <id>` beside them.
    """
    survive("what-if", stop, _next, log)


def _next(stop: threading.Event) -> None:
    run = claim()
    if run is None:
        stop.wait(IDLE_POLL)
    else:
        _in_a_process(run, stop)


def _in_a_process(run: WhatIfRun, stop: threading.Event) -> None:
    """Run a claimed run as `manage.py whatif_run`; a run whose process failed is marked failed."""
    command = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "whatif_run", str(run.pk)]
    # Its errors go to a file: a pipe read only at the end would block a child that says much.
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        # The child stops itself at MAX_RUN_SECONDS while placing; this bounds the rest too.
        kill_at = time.monotonic() + MAX_RUN_SECONDS + KILL_GRACE
        while child.poll() is None:
            if time.monotonic() > kill_at:
                child.kill()
                child.wait(timeout=30)
                _finish(run, WhatIfRun.Status.FAILED, error=TOO_LONG)
                return
            if stop.wait(0.5):
                child.terminate()  # taken up again once stale, by this worker or another
                child.wait(timeout=30)
                return
        errors.seek(0)
        said = errors.read().decode(errors="replace").strip().splitlines()
    if child.returncode != 0:
        why = said[-1] if said else "no output"
        log.warning("what-if #%s: its process stopped (%s): %s", run.pk, child.returncode, why)
        WhatIfRun.objects.filter(pk=run.pk, status=WhatIfRun.Status.RUNNING).update(
            status=WhatIfRun.Status.FAILED,
            error=f"the run's process stopped (exit {child.returncode}): {why}"[:500],
            finished_at=timezone.now(),
        )
