"""Benchmark the worker's idle check over many running reservations with two hours of samples each."""

import json

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from devtools.bench.idle import run_idle
from devtools.bench.placements import BUILD_CHUNK


class Command(BaseCommand):
    help = (
        "Build bench-<n> with --reservations running one-GPU reservations and 125 minutes of samples per "
        "GPU (a tenth idle), then time the idle check --rounds times: the first marks, the rest are steady."
    )

    def add_arguments(self, parser):
        parser.add_argument("--reservations", type=int, default=10_000)
        parser.add_argument("--rounds", type=int, default=6)
        parser.add_argument(
            "--lent",
            type=int,
            default=0,
            help="then lend this many idle GPUs to spot work and time the worker's lending checks",
        )
        parser.add_argument(
            "--pool-policy", action="store_true", help="give the pool a policy of its own (docs/policy.md)"
        )

    def handle(self, *args, reservations, rounds, pool_policy, lent, **options):
        def bar(items):
            return tqdm(items, desc="building nodes", unit=f"×{BUILD_CHUNK} nodes", file=self.stderr._out)

        if not 0 <= lent <= reservations // 10:
            raise CommandError(f"--lent: from 0 to {reservations // 10} (the idle tenth)")
        figures = run_idle(reservations, rounds, progress=bar, pool_policy=pool_policy, lent=lent)
        self.stdout.write(json.dumps(figures, indent=2))
        if figures["idleNow"] != figures["expectedIdle"]:
            raise CommandError(f"{figures['idleNow']} idle, expected {figures['expectedIdle']}")
