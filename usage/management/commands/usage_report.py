"""Print GPU-hours booked and used per tenant, pool or GPU model and day, week or month."""

from __future__ import annotations

import json

from django.utils import timezone

from capacity.port import EVERYONE, BerthCommand
from usage.api import DEFAULT_DAYS, columns, write_rows
from usage.report import BUCKETS, GROUPS, heading, usage_period, usage_report


class Command(BerthCommand):
    help = (
        "GPU-hours booked and used (every tenant's), as GET /api/v1/usage answers: a table, --json or --csv. "
        "A period is whole UTC days, --to included; hours after now are booked ahead, apart from booked."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--from",
            dest="start",
            help=f"First day, YYYY-MM-DD (default {DEFAULT_DAYS - 1} days before --to).",
        )
        parser.add_argument("--to", dest="end", help="Last day, YYYY-MM-DD, included (default today, UTC).")
        parser.add_argument("--group-by", default="tenant", help=f"Comma-separated: {', '.join(GROUPS)}.")
        parser.add_argument("--bucket", default="day", choices=BUCKETS)
        shown = parser.add_mutually_exclusive_group()
        shown.add_argument("--json", dest="as_json", action="store_true")
        shown.add_argument("--csv", dest="as_csv", action="store_true")

    def handle(self, *args, start, end, group_by, bucket, as_json: bool, as_csv: bool, **options):
        now = timezone.now()
        first, last = self.call(usage_period, start, end, now=now, days=DEFAULT_DAYS)
        groups = [g for g in group_by.split(",") if g]
        rows = [r.as_dict() for r in self.call(usage_report, first, last, groups, bucket, EVERYONE, now=now)]
        if as_json:
            self.stdout.write(
                json.dumps({"from": first.isoformat(), "to": last.isoformat(), "rows": rows}, indent=2)
            )
        elif as_csv:
            write_rows(self.stdout, rows, groups)
        else:
            present = columns(groups)
            heads = {c: heading(c, bucket) for c in present}
            widths = {c: max([len(heads[c]), *(len(str(r.get(c, ""))) for r in rows)]) for c in present}
            self.stdout.write(f"{first} to {last} (UTC, both whole days)")
            self.stdout.write("  ".join(heads[c].ljust(widths[c]) for c in present))
            for r in rows:
                self.stdout.write("  ".join(str(r.get(c, "")).ljust(widths[c]) for c in present))
            booked = sum(r["gpuHoursBooked"] for r in rows)
            used = sum(r["gpuHoursUsed"] for r in rows)
            ahead = sum(r["gpuHoursBookedAhead"] for r in rows)
            self.stdout.write(
                f"total: {booked:.1f} GPU-hours booked, {used:.1f} used"
                + (f"; {ahead:.1f} booked ahead (after now)" if ahead else "")
            )
