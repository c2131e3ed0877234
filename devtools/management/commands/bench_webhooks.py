"""Benchmark webhooks: commit-to-delivery latency, and placements per second with and without subscribers."""

import json

from django.core.management.base import BaseCommand
from tqdm import tqdm

from devtools.bench.placements import BUILD_CHUNK
from devtools.bench.webhooks import run_webhooks
from devtools.bench.webhooks_isolation import run_dribble


class Command(BaseCommand):
    help = (
        "Build pool bench-<nodes>, then alternate rounds of --count inline placements without and with "
        "--subscribers webhook subscriptions to every reservation event (a receiver on loopback, the "
        "worker running), then --count placements --pace seconds apart to one subscriber: placements/s per "
        "round and commit-to-delivery p50/p95 in the burst and paced."
    )

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=1000)
        parser.add_argument("--count", type=int, default=500)
        parser.add_argument("--subscribers", type=int, default=10)
        parser.add_argument("--rounds", type=int, default=3)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--pace", type=float, default=0.05, help="Seconds between the paced placements.")
        parser.add_argument(
            "--dribble",
            type=int,
            default=0,
            metavar="N",
            help="Instead: N receivers that dribble a header line every 2 s beside one fast one; the fast "
            "one's commit-to-delivery p50/p95 over --count placements --pace apart, then the drain rate of "
            "--backlog placements to --subscribers fast subscriptions.",
        )
        parser.add_argument(
            "--backlog", type=int, default=1000, help="Placements queued before the worker starts."
        )

    def handle(self, *args, nodes, count, subscribers, rounds, seed, pace, dribble, backlog, **options):
        def bar(items):
            return tqdm(items, desc="building nodes", unit=f"×{BUILD_CHUNK} nodes", file=self.stderr._out)

        if dribble:
            found = run_dribble(nodes, count, pace, dribble, backlog, subscribers, seed, progress=bar)
            self.stdout.write(json.dumps(found, indent=2))
            return
        self.stdout.write(
            json.dumps(run_webhooks(nodes, count, subscribers, rounds, seed, pace, progress=bar), indent=2)
        )
