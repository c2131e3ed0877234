"""Benchmark reclaim latency: the owner's process in a report, or its reclaim call, to lent GPUs back."""

import json

from django.core.management.base import BaseCommand, CommandError

from devtools.bench.load import LoadError
from devtools.bench.reclaim import MAX_ROUNDS, run_reclaim


class Command(BaseCommand):
    help = (
        "Lend an idle owner's two GPUs to spot work and give them back --rounds times per cause (the node's "
        "report showing the owner's process; the owner's reclaim call), against Berth under gunicorn (or "
        f"--url, on loopback; at most {MAX_ROUNDS} rounds). Prints p50 and p95 until the spot work is "
        "preempted and until a long-polling agent reads the GPUs as the owner's alone."
    )

    def add_arguments(self, parser):
        parser.add_argument("--rounds", type=int, default=50)
        parser.add_argument("--url", help="A Berth already serving on loopback, e.g. http://127.0.0.1:8000")

    def handle(self, *args, rounds, url, **options):
        try:
            figures = run_reclaim(rounds, url)
        except LoadError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(json.dumps(figures, indent=2))
