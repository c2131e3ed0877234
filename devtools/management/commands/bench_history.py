"""Benchmark placements before and after a year of bookings moves to the history tables."""

import json

from django.core.management.base import BaseCommand
from tqdm import tqdm

from devtools.bench.archive_timing import run_history


def _row(name: str, figures: dict | None) -> str:
    if figures is None:
        return f"{name:<34}{'(not measured: the fleet had bookings)':>40}"
    return f"{name:<34}{figures['perSecond']:>10}{figures['p50Ms']:>10}{figures['p95Ms']:>10}{figures['placed']:>10}"


class Command(BaseCommand):
    help = (
        "Time --placements inline placements on bench_scale's fleet while empty, after a year of bookings "
        "(--history ended, --live placed) and after moving what ended HISTORY_AFTER ago to the history "
        "tables; print the live tables' size at each step and a JSON summary line."
    )

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=10_000)
        parser.add_argument("--history", type=int, default=1_000_000)
        parser.add_argument("--live", type=int, default=50_000)
        parser.add_argument("--placements", type=int, default=300)

    def handle(self, *args, nodes, history, live, placements, **options):
        def bar(items):
            return tqdm(items, file=self.stderr._out, leave=False)

        f = run_history(nodes, history, live, placements, progress=bar)
        self.stdout.write(f"{f['nodes']} nodes, {f['history']} ended and {f['live']} live reservations")
        self.stdout.write(f"{'placements':<34}{'per s':>10}{'p50 ms':>10}{'p95 ms':>10}{'placed':>10}")
        self.stdout.write(_row("empty fleet", f["placementsEmpty"]))
        self.stdout.write(_row("after a year, all rows live", f["placementsYear"]))
        self.stdout.write(_row("after the move to history", f["placementsMoved"]))
        self.stdout.write(f"{'table':<34}{'rows before':>14}{'MB':>8}{'rows after':>14}{'MB':>8}")
        for table, was in f["tablesBefore"].items():
            now = f["tablesAfter"][table]
            self.stdout.write(f"{table:<34}{was['rows']:>14}{was['MB']:>8}{now['rows']:>14}{now['MB']:>8}")
        self.stdout.write(
            f"moved {f['moved']} rows in {f['moveSeconds']} s ({f['movedPerSecond']}/s); "
            f"double-booked: {f['doubleBooked']}"
        )
        self.stdout.write(json.dumps(f))
