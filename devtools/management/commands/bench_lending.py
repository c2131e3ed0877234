"""Benchmark lending: a simulated day of the demo's shape, a third of the bookings idle half the time."""

import json

from django.core.management.base import BaseCommand, CommandError

from devtools.bench.lending import run_lending


class Command(BaseCommand):
    help = (
        "Book three pools of the demo's shape (62 nodes of 8 GPUs) solid for a day in 2030, a third of the "
        "bookings idle for 12 hours, and run the day in 15-minute ticks with --spot-per-tick spot requests "
        "each; print the GPU-hours spot work ran on lent GPUs. Deterministic for --seed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--spot-per-tick", type=int, default=6)

    def handle(self, *args, seed, spot_per_tick, **options):
        if not 0 < spot_per_tick <= 100:
            raise CommandError("--spot-per-tick: from 1 to 100")
        figures = run_lending(seed, spot_per_tick)
        self.stdout.write(json.dumps(figures, indent=2))
        if figures["drift"]:
            raise CommandError(f"the audit found {figures['drift']} problems")
