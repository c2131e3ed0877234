"""Names that processes share through Postgres: NOTIFY channels and advisory lock classes.

They sit below the placers and services so that the one who sends and the one who listens (the
queueing insert and the worker, the batch and the waiters) both import them from here.
"""

from __future__ import annotations

QUEUED_CHANNEL = "capacity_queued"  # payload: the pool's pk, sent when a reservation is queued
PLACED_CHANNEL = "capacity_placed"  # payload: the pks of a batch's reservations, sent at its commit
# payload: a pool's pk whose unusable bookings, or pending work past a series release's one retry
# pass, a request left to the worker (a round now)
REPAIR_CHANNEL = "capacity_repair"

# pg_try_advisory_xact_lock(class, pool): the class keeps Berth's pool locks apart from others'.
PLACER_LOCK_CLASS = 0x42455254  # "BERT"
# pg_advisory_xact_lock(class, tenant): keeps the tenant locks apart from the placer's pool locks.
QUOTA_LOCK_CLASS = 0x51554F54  # "QUOT"
