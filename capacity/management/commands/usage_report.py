"""Print GPU-hours booked and used per tenant, pool or GPU model and day, week or month."""

from __future__ import annotations

import csv
import json
from datetime import timedelta

from django.utils import timezone

from capacity import services
from capacity.api.usage import COLUMNS, when
from capacity.management.base import BerthCommand
from capacity.services.usage_report import BUCKETS, GROUPS, usage_report


class Command(BerthCommand):
    help = (
        "GPU-hours booked and used (every tenant's), as GET /api/v1/usage answers: a table, --json or --csv. "
        "Booked hours are each booking's overlap with the period; a MIG slice is its share of its GPU."
    )

    def add_arguments(self, parser):
        parser.add_argument("--from", dest="start", help="A date or ISO time (default 30 days before --to).")
        parser.add_argument("--to", dest="end", help="A date or ISO time, exclusive (default now).")
        parser.add_argument("--group-by", default="tenant", help=f"Comma-separated: {', '.join(GROUPS)}.")
        parser.add_argument("--bucket", default="day", choices=BUCKETS)
        shown = parser.add_mutually_exclusive_group()
        shown.add_argument("--json", dest="as_json", action="store_true")
        shown.add_argument("--csv", dest="as_csv", action="store_true")

    def handle(self, *args, start, end, group_by, bucket, as_json: bool, as_csv: bool, **options):
        end_at = self.call(when, end, "to", timezone.now())
        start_at = self.call(when, start, "from", end_at - timedelta(days=30))
        groups = [g for g in group_by.split(",") if g]
        rows = [
            r.as_dict() for r in self.call(usage_report, start_at, end_at, groups, bucket, services.EVERYONE)
        ]
        if as_json:
            self.stdout.write(json.dumps({"rows": rows}, indent=2))
        elif as_csv:
            present = [c for c in COLUMNS if any(c in r for r in rows)] or list(COLUMNS)
            writer = csv.DictWriter(self.stdout, fieldnames=present, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        else:
            present = [c for c in COLUMNS if any(c in r for r in rows)] or list(COLUMNS)
            widths = {c: max([len(c), *(len(str(r.get(c, ""))) for r in rows)]) for c in present}
            self.stdout.write("  ".join(c.ljust(widths[c]) for c in present))
            for r in rows:
                self.stdout.write("  ".join(str(r.get(c, "")).ljust(widths[c]) for c in present))
            total_booked = sum(r["gpuHoursBooked"] for r in rows)
            total_used = sum(r["gpuHoursUsed"] for r in rows)
            self.stdout.write(f"total: {total_booked:.1f} GPU-hours booked, {total_used:.1f} used")
