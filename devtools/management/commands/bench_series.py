"""Benchmark series: a weekly series of 60 occurrences on a 1,000-node pool, against 60 single creates,
and releasing one beside --pending bookings that wait."""

import json

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from devtools.bench.placements import BUILD_CHUNK
from devtools.bench.series import run


class Command(BaseCommand):
    help = (
        "Build pool bench-<nodes>, place --background seeded requests, then book --runs weekly series "
        "(MO, WE, FR) of --occurrences windows of 4 h, every other one all-or-nothing, and the same "
        "windows as single creates; print the time to place all and statements per occurrence; then "
        "release a series of --occurrences beside --pending bookings that cannot place (a tenant past "
        "its borrowing limit) and print its time and statements."
    )

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=1000)
        parser.add_argument("--occurrences", type=int, default=60)
        parser.add_argument("--runs", type=int, default=5)
        parser.add_argument("--background", type=int, default=1000)
        parser.add_argument("--gpus", type=int, default=2)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument(
            "--pending",
            type=int,
            default=0,
            help="bookings left pending in the pool before the timed release",
        )

    def handle(self, *args, nodes, occurrences, runs, background, gpus, seed, pending, **options):
        def bar(items):
            return tqdm(items, desc="building nodes", unit=f"×{BUILD_CHUNK} nodes", file=self.stderr._out)

        figures = run(nodes, occurrences, runs, background, gpus, seed, progress=bar, pending=pending)
        self.stdout.write(
            f"a weekly series of {occurrences} occurrences on {nodes} nodes ({background} bookings before): "
            f"{figures['series_s_mean']} s to place all (mean of {runs}, max {figures['series_s_max']} s), "
            f"{figures['ms_per_occurrence']} ms and {figures['statements_per_occurrence']} statements per "
            f"occurrence ({figures['placed']} placed, {figures['pending']} pending)\n"
            f"the same windows as single creates: {figures['single_creates_s_mean']} s, "
            f"{figures['single_ms_per_create']} ms and {figures['statements_per_single_create']} statements each\n"
            f"releasing a series of {occurrences} beside {pending} pending: {figures['release_s']} s, "
            f"{figures['release_statements']} statements ({figures['release_statements_per_occurrence']} per "
            f"occurrence); still pending after: {figures['pending_still_pending']}\n"
            f"double-booked devices: {figures['double_booked']}; check_capacity drift: {figures['drift']}"
        )
        self.stdout.write(json.dumps(figures))
        if figures["double_booked"] or figures["drift"]:
            raise CommandError("the benchmark found double bookings or drift", returncode=1)
