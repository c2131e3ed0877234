"""Benchmark shares in what if: each tenant's GPU-hours against its guarantee, and a lent share's return."""

import json

from django.core.management.base import BaseCommand
from tqdm import tqdm

from devtools.bench.shares import run_shares


class Command(BaseCommand):
    help = (
        "Build pool bench-<nodes> with tenants bench-0.. guaranteed --percents of its GPUs, place --rate "
        "synthetic requests an hour for --hours with the what-if engine, without shares and with them, "
        "busy and with tenant --idle asking for nothing in the first half; print each tenant's GPU-hours "
        "against its share and how long a lent share took to come back, and a JSON line."
    )

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=125, help="Nodes of 8 GPUs (125: 1,000 GPUs).")
        parser.add_argument("--percents", default="50,30,20", help="Guarantees, per cent of the GPUs.")
        parser.add_argument("--rate", type=float, default=80.0, help="Arrivals per hour (80).")
        parser.add_argument("--hours", type=float, default=168.0, help="Simulated hours (168: a week).")
        parser.add_argument("--mean-hours", type=float, default=6.0)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--idle", type=int, default=1, help="The tenant idle for the first half (1).")

    def handle(self, *args, nodes, percents, rate, hours, mean_hours, seed, idle, **options):
        def bar(items):
            return tqdm(items, file=self.stderr._out, leave=False)

        f = run_shares(
            nodes,
            tuple(int(p) for p in percents.split(",")),
            seed=seed,
            per_hour=rate,
            hours=hours,
            mean_hours=mean_hours,
            idle=idle,
            progress=bar,
        )
        self.stdout.write(
            f"{f['requests']:,} requests at {rate:g}/h over {f['gpus']:,.0f} GPUs for {hours:g} h; "
            f"guaranteed {f['guaranteed']}"
        )
        for key in ("busyPlain", "busyShares", "idlePlain", "idleShares"):
            s = f[key]
            self.stdout.write(
                f"\n{key} ({s['seconds']} s, never placed {s['never']}, reclaims {s['reclaims']})"
            )
            periods = [p for p in ("wholePeriod", "afterFirstDay", "firstHalf", "secondHalf") if p in s]
            for tenant, share in f["guaranteed"].items():
                cells = "  ".join(
                    f"{p} {s[p][tenant]['gpuHours']:>9,} GPU-h {s[p][tenant]['percent']:>5} %"
                    for p in periods
                )
                w = s["tenantWaits"][tenant]
                self.stdout.write(
                    f"  {tenant:<8} share {100 * share / f['gpus']:>4.0f} %  {cells}  "
                    f"wait p50 {w['p50Minutes']:,} p95 {w['p95Minutes']:,} min  reclaimed {s['reclaimed'][tenant]}"
                )
            if "return" in s:
                self.stdout.write(f"  return: {json.dumps(s['return'])}")
        self.stdout.write(json.dumps(f))
