"""Benchmark the fair queue's order: what a worker round spends ordering a pool's pending work."""

import json

from django.core.management.base import BaseCommand

from devtools.bench.queue import run_queue


class Command(BaseCommand):
    help = (
        "Build pool bench-queue (--nodes 8-GPU nodes, --tenants tenants, all but two with a share, "
        "--history-days of past bookings on every GPU, --pending pending reservations), then time with "
        "shares on and off: the round's fair-shares read, the retry order, a batch's claim of 64, the "
        "queue places of a list page and of one reservation, and the pure order (p50/p95 ms, statements)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=100)
        parser.add_argument("--tenants", type=int, default=20)
        parser.add_argument("--history-days", type=int, default=70)
        parser.add_argument("--pending", type=int, default=10_000)
        parser.add_argument("--repeats", type=int, default=20)
        parser.add_argument("--keep", action="store_true", help="Measure the pool the last run built.")

    def handle(self, *args, nodes, tenants, history_days, pending, repeats, keep, **options):
        figures = run_queue(nodes, tenants, history_days, pending, repeats, keep=keep)
        for side in ("sharesOn", "sharesOff"):
            f = figures[side]
            self.stdout.write(
                f"{side}: fair shares {f['fairShares']['p50Ms']} ms ({f['fairShares']['statements']} st), "
                f"retry order {f['retryOrder']['p50Ms']} ms, batch claim {f['batchClaim']['p50Ms']} ms, "
                f"places of 50 {f['placesOf50']['p50Ms']} ms ({f['placesOf50']['statements']} st), "
                f"of 1 {f['placesOf1']['p50Ms']} ms, pure order {f['pureOrder']['p50Ms']} ms; "
                f"round (housekeeping) {f['round']['housekeepingMs']} ms"
            )
        self.stdout.write(json.dumps(figures))
