"""Benchmark the pool page's availability chart on a pool of 8-GPU nodes with seeded bookings."""

import json

from django.core.management.base import BaseCommand
from tqdm import tqdm

from devtools.bench.chart_timing import run_availability
from devtools.bench.placements import BUILD_CHUNK


class Command(BaseCommand):
    help = (
        "Build pool bench-<nodes>, book --count seeded requests of 1/2/4/8 GPUs within two weeks, then time "
        "the availability read, the chart and the whole pool page (p50/p95 ms and queries)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=1000)
        parser.add_argument("--count", type=int, default=10_000)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--repeats", type=int, default=20)
        parser.add_argument("--keep", action="store_true", help="Measure the pool the last run booked.")

    def handle(self, *args, nodes, count, seed, repeats, keep, **options):
        def bar(items):
            return tqdm(items, desc="building nodes", unit=f"×{BUILD_CHUNK} nodes", file=self.stderr._out)

        figures = run_availability(nodes, count, seed, repeats, progress=bar, keep=keep)
        self.stdout.write(json.dumps(figures, indent=2))
