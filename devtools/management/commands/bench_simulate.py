"""Benchmark what-if runs: synthetic requests over a large pool, both sides, and check nothing was written."""

import json

from django.core.management.base import BaseCommand
from tqdm import tqdm

from devtools.bench.simulate import run_simulate


class Command(BaseCommand):
    help = (
        "Build pool bench-<nodes> (as bench_placements does), then time `simulate` of --requests synthetic "
        "requests over it, as it is and with --added copies of its first node; print where the time went, "
        "that no capacity or inventory table changed and that the audit found no drift, and a JSON line."
    )

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=1_000)
        parser.add_argument("--requests", type=int, default=10_000)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument(
            "--rate", type=float, default=250.0, help="Arrivals per hour (250: the pool ~80%% busy)."
        )
        parser.add_argument("--added", type=int, default=100)

    def handle(self, *args, nodes, requests, seed, rate, added, **options):
        def bar(items):
            return tqdm(items, file=self.stderr._out, leave=False)

        f = run_simulate(nodes, requests, seed, rate, added, progress=bar)
        self.stdout.write(
            f"{f['requests']:,} requests over {f['nodes']:,} nodes, both sides: {f['seconds']} s"
        )
        for side in ("baseline", "changed"):
            s, w = f[side], f["where"][side]
            self.stdout.write(
                f"{side:<9} {s['nodes']:>6} nodes  placed {s['placed']:,} ({s['placedAtOnce']:,} at once, "
                f"{s['neverPlaced']:,} never)  wait p95 {s['waitP95Minutes']} min  preemptions {s['preemptions']}  "
                f"time: {json.dumps(w)}"
            )
        self.stdout.write(f"wrote nothing: {f['wroteNothing']}  drift: {f['drift']}")
        self.stdout.write(json.dumps(f))
