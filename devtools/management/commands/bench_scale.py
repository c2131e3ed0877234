"""Benchmark every page and API answer at a fleet's size with a year of history."""

import json

from django.core.management.base import BaseCommand
from tqdm import tqdm

from devtools.bench.scale import run_scale


class Command(BaseCommand):
    help = (
        "Build --nodes nodes of 8 GPUs across 10 pools, --history ended reservations over the last year and "
        "--live placed ones (set-based; a second run reuses them), then time each page and API endpoint "
        "--repeats times: p50, p95 and statements per answer, one table, then a JSON summary line."
    )

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=10_000)
        parser.add_argument("--history", type=int, default=1_000_000)
        parser.add_argument("--live", type=int, default=50_000)
        parser.add_argument("--repeats", type=int, default=20)
        parser.add_argument(
            "--cold",
            type=int,
            default=10,
            help="New web processes that each ask the pool page first (0: none)",
        )

    def handle(self, *args, nodes, history, live, repeats, cold, **options):
        def bar(items):
            return tqdm(items, file=self.stderr._out, leave=False)

        figures = run_scale(nodes, history, live, repeats, progress=bar, cold=cold)
        self.stdout.write(
            f"{figures['nodes']} nodes, {figures['history']} ended and {figures['live']} live reservations "
            f"(built in {figures['buildSeconds']} s + {figures['historySeconds']} s + {figures['liveSeconds']} s; "
            f"device bookings {figures['deviceBookingMB']} MB); double-booked: {figures['doubleBooked']}"
        )
        self.stdout.write(f"{'endpoint':<26}{'p50 ms':>10}{'p95 ms':>10}{'statements':>12}")
        for name, row in figures["endpoints"].items():
            self.stdout.write(f"{name:<26}{row['p50Ms']:>10}{row['p95Ms']:>10}{row['statements']:>12}")
        summary = {k: figures[k] for k in ("nodes", "history", "live", "endpoints")}
        self.stdout.write(json.dumps(summary))
