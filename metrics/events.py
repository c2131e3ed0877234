"""Event counters: what capacity tells (capacity.observe), counted in a few dict and mmap writes.

Each function here observes the capacity event of its name (OBSERVERS, registered by apps.py) and
sends no statement. Each is recorded when the transaction that did the work commits (`on_commit`):
a placement rolled back, or retried after a serialization conflict, is not counted. Outside a
transaction the callback runs at once. Labels take a handful of fixed values, so series stay few.
Every metric has a label, so no process opens its file before it first counts something (tests
point each run at its own directory). A node report refused and a read sent to the replica are
counted at once (apps.py): they write nothing to commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from .store import fold_dead, metrics_dir

# Before prometheus-client is imported: it picks per-process or shared values when first imported.
metrics_dir()

from prometheus_client import Counter, Histogram, values  # noqa: E402

if not getattr(values.ValueClass, "_multiprocess", False):
    # Another package imported prometheus-client before the directory was set: without this each
    # process would count alone and a scrape of the web server would never see the worker's batches.
    values.ValueClass = values.MultiProcessValue()

# This process is starting: fold what exited processes left behind.
fold_dead()

POOL_LEASE = "pool-lease"
PLACED = "placed"
PREEMPTING = "preempting"  # placed by taking spot work back
PENDING = "pending"
LOST_RACE = "lost_race"  # gave up after max_attempts lost races
# Both placers say so when they give up after losing every attempt (capacity.placers.attempt.gave_up).
GAVE_UP_PREFIX = "Unschedulable after "

PLACEMENTS = Counter(
    "berth_placements",
    "Requests placed, by placer and the outcome of their first placement: placed, preempting (placed by "
    "taking spot work back), pending (nothing fits), lost_race (gave up after losing every attempt). "
    "Each request counts once; a pending booking tried again counts in berth_placement_retries_total.",
    ["placer", "outcome"],
    registry=None,
)
RETRIES = Counter(
    "berth_placement_retries",
    "Pending bookings tried again (as capacity frees up, and each worker round), by placer and outcome "
    "(as berth_placements_total): one booking that stays pending counts once per try.",
    ["placer", "outcome"],
    registry=None,
)
LOST_RACES = Counter(
    "berth_placement_lost_races",
    "Plans that lost the race at commit (a concurrent booking or change took the node): each was replanned.",
    ["placer"],
    registry=None,
)
PREEMPTIONS = Counter(
    "berth_preemptions",
    "Reservations taken back, by placer: spot work (or, in a pool with shares, borrowing work) that "
    "regular work fit only over (inline, pool-lease), or that BookingRepair's moves needed (repair).",
    ["placer"],
    registry=None,
)
REPAIRS = Counter(
    "berth_repairs",
    "Allocations BookingRepair (kind repair), drain (kind drain) or a maintenance window (kind "
    "maintenance) tried to move: moved, or no_room "
    "(kept as they were; the worker tries again every round, so each try counts).",
    ["kind", "outcome"],
    registry=None,
)
REPLICA_READS = Counter(
    "berth_replica_reads",
    "Reads that may use the replica (DATABASE_REPLICA_URL), by where they went: replica, or the "
    "primary because the client had just written (pinned), the replica lagged (lag) or it was down.",
    ["outcome"],
    registry=None,
)
REPORTS_REFUSED = Counter(
    "berth_node_reports_refused",
    "Node reports refused, by reason: the refusal's code in lower case (invalid_input, conflict, "
    "forbidden, ...). The node's detail shows the last one (lastRefusal).",
    ["reason"],
    registry=None,
)
RECLAIMS = Counter(
    "berth_reclaims",
    "Spot reservations taken back from an idle owner's lent GPUs (docs/policy.md), by pool and cause: "
    "request (the owner reclaimed), busy (the owner no longer lends) or ended (the owner's booking ended).",
    ["pool", "cause"],
    registry=None,
)
LENT_GPU_SECONDS = Counter(
    "berth_lent_gpu_seconds",
    "GPU-seconds spot work ran on idle owners' lent GPUs, by pool: counted when the lent work ends "
    "(released, expired or taken back for its owner).",
    ["pool"],
    registry=None,
)
# Deprecated: the same figure in hours, not the base unit promtool's lint wants. Kept for one release.
GPU_HOURS_LENT = Counter(
    "berth_gpu_hours_lent",
    "Deprecated, use berth_lent_gpu_seconds_total (the same figure in seconds); removed in the next release.",
    ["pool"],
    registry=None,
)
BATCH_SIZE = Histogram(
    "berth_placement_batch_size",
    "Reservations taken by one pool-lease batch.",
    ["placer"],
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
    registry=None,
)
QUEUE_SECONDS = Histogram(
    "berth_placement_queue_seconds",
    "Seconds from a reservation queued for the pool-lease placer to its batch's commit that placed it.",
    ["placer"],
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
    registry=None,
)


def outcome_of(status: str, reason: str = "", preempted: Sequence[int] = ()) -> str:
    """Return the outcome label of a placement's status ("placed" or "pending") and reason."""
    if status == PLACED:
        return PREEMPTING if preempted else PLACED
    return LOST_RACE if reason.startswith(GAVE_UP_PREFIX) else PENDING


def placement(
    placer: str,
    status: str,
    *,
    reason: str = "",
    lost: int = 0,
    preempted: Sequence[int] = (),
    queued_at: datetime | None = None,
    retry: bool = False,
) -> None:
    """Count one placement when the transaction commits: its outcome, lost races and preemptions.

    A `retry` (a pending booking tried again) counts as a retry, not as a request placed. `queued_at`
    (pool-lease) also observes the time from queued to placed, as of the commit.
    """
    outcome = outcome_of(status, reason, preempted)
    taken = len(preempted)
    counter = RETRIES if retry else PLACEMENTS

    def record() -> None:
        counter.labels(placer, outcome).inc()
        if lost:
            LOST_RACES.labels(placer).inc(lost)
        if taken:
            PREEMPTIONS.labels(placer).inc(taken)
        if queued_at is not None and outcome in (PLACED, PREEMPTING):
            QUEUE_SECONDS.labels(placer).observe(max(0.0, (timezone.now() - queued_at).total_seconds()))

    transaction.on_commit(record, robust=True)


def preemptions(placer: str, taken: int) -> None:
    """Count spot reservations taken back outside a placement (BookingRepair moving work), at the commit."""
    if taken:
        transaction.on_commit(lambda: PREEMPTIONS.labels(placer).inc(taken), robust=True)


def reclaims(by_pool: dict[str, int], cause: str) -> None:
    """Count lent spot work taken back, per pool, when the transaction commits."""

    def record() -> None:
        for pool, taken in by_pool.items():
            RECLAIMS.labels(pool, cause).inc(taken)

    if by_pool:
        transaction.on_commit(record, robust=True)


def lent_gpu_hours(by_pool: dict[str, float]) -> None:
    """Count the GPU-hours lent work ran (in seconds), per pool, when the transaction that ended it commits."""

    def record() -> None:
        for pool, hours in by_pool.items():
            LENT_GPU_SECONDS.labels(pool).inc(hours * 3600)
            GPU_HOURS_LENT.labels(pool).inc(hours)

    if by_pool:
        transaction.on_commit(record, robust=True)


def batch(size: int) -> None:
    """Observe one pool-lease batch of `size` reservations when it commits."""
    transaction.on_commit(lambda: BATCH_SIZE.labels(POOL_LEASE).observe(size), robust=True)


def repair(kind: str, moved: int, no_room: int) -> None:
    """Count a reservation's allocations moved and left for lack of room when the repair commits."""

    def record() -> None:
        if moved:
            REPAIRS.labels(kind, "moved").inc(moved)
        if no_room:
            REPAIRS.labels(kind, "no_room").inc(no_room)

    transaction.on_commit(record, robust=True)


# What each capacity event (capacity.observe.EVENTS) is counted by.
OBSERVERS = {
    "placement": placement,
    "preemptions": preemptions,
    "repair": repair,
    "batch": batch,
    "reclaims": reclaims,
    "lent_gpu_hours": lent_gpu_hours,
}


def report_refused(sender, code, **kwargs) -> None:
    """Count a refused node report (inventory's signal) at once: refusals are final, nothing was written."""
    REPORTS_REFUSED.labels(str(code).lower()).inc()


def replica_read(outcome: str) -> None:
    """Count where a read that may use the replica went (config.replica)."""
    REPLICA_READS.labels(outcome).inc()
