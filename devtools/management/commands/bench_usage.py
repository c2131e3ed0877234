"""Benchmark the usage report: a month of bookings at a fleet's size, a day of samples."""

import json

from django.core.management.base import BaseCommand
from tqdm import tqdm

from devtools.bench.placements import BUILD_CHUNK
from devtools.bench.usage import run_usage


class Command(BaseCommand):
    help = (
        "Build bench-<nodes>, write --bookings one-GPU bookings over the last 30 days and a day of samples "
        "for --sampled devices, then time the month's usage report (p50/p95 over --repeats)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=1000)
        parser.add_argument("--bookings", type=int, default=100_000)
        parser.add_argument("--sampled", type=int, default=1000)
        parser.add_argument("--repeats", type=int, default=10)

    def handle(self, *args, nodes, bookings, sampled, repeats, **options):
        def bar(items):
            return tqdm(items, desc="building nodes", unit=f"×{BUILD_CHUNK} nodes", file=self.stderr._out)

        self.stdout.write(json.dumps(run_usage(nodes, bookings, sampled, repeats, progress=bar), indent=2))
