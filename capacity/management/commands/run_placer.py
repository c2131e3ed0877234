"""The capacity worker: place queued batches, release reservations whose window ended, retry pending ones."""

import time

from django.core.management.base import BaseCommand

from capacity import services
from capacity.conf import placer_config
from capacity.placers.batch import QUEUED_CHANNEL, place_queued
from capacity.placers.db import Listener
from capacity.placers.inline import POOL_LEASE
from inventory.models import Pool


class Command(BaseCommand):
    help = (
        "Every --interval seconds: release ended reservations, then retry pending ones oldest first. "
        "With the pool-lease placer, also place queued reservations in batches as soon as they arrive."
    )

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=10.0)
        parser.add_argument("--once", action="store_true", help="Run one round and exit.")

    def handle(self, *args, interval, once, **options):
        config = placer_config()
        batching = config.placer == POOL_LEASE
        if once:
            self._round(config, batching, housekeeping=True, report=True)
            return
        with Listener(QUEUED_CHANNEL) as queued:
            next_round = 0.0
            while True:
                housekeeping = time.monotonic() >= next_round
                if housekeeping:
                    next_round = time.monotonic() + interval
                self._round(config, batching, housekeeping=housekeeping, report=False)
                # A notification means a reservation was queued: batch it now, not at the next round.
                queued.wait(max(next_round - time.monotonic(), 0))

    def _round(self, config, batching, *, housekeeping, report):
        batch = place_queued(config) if batching else None
        expired = placed = 0
        if housekeeping:
            expired = services.expire_ended()
            placed = services.retry_pending(Pool.objects.filter(archived=False).values_list("pk", flat=True))
        lines = []
        if batch is not None and (len(batch) or report):
            lines.append(f"batched {len(batch.placed)} placed, {len(batch.pending)} pending")
        if expired or placed or report:
            lines.append(f"released {expired} ended, placed {placed} pending")
        for line in lines:
            self.stdout.write(line)
