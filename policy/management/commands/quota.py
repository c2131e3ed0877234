"""Show a tenant's quota: per resource the limit, the most held at once in a window, and held now."""

from typing import Any

from django.core.management.base import CommandParser

from capacity.port import BerthCommand, to_datetime
from policy.quota_report import quota_report


class Command(BerthCommand):
    help = (
        "Show TENANT's quota use over a window (a week from now by default): the limit, the most held at"
        " once in the window, and what is held now. Refusals exit 2."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="Tenant slug, such as acme.")
        parser.add_argument("--start", help="ISO 8601 window start with a time zone (default now).")
        parser.add_argument("--end", help="ISO 8601 window end with a time zone (default a week on).")
        parser.add_argument("--json", action="store_true", help="Print the API's JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant, start, end, uses = self.call(
            quota_report,
            options["tenant"],
            scope=self.scope,
            start=options["start"],
            end=options["end"],
        )
        rows = [
            {"resource": u.resource, "limit": u.limit, "peak": u.peak, "now": u.now, "default": u.default}
            for u in uses
        ]
        if options["json"]:
            self.print_json(
                {
                    "tenantId": tenant.slug,
                    "start": to_datetime(start).isoformat(),
                    "end": to_datetime(end).isoformat(),
                    "quota": rows,
                }
            )
            return
        self.stdout.write(
            f"quota of {tenant.slug}, {to_datetime(start):%Y-%m-%d %H:%M} to {to_datetime(end):%Y-%m-%d %H:%M} UTC"
        )
        self.stdout.write(f"{'resource':<16} {'now':>8} {'peak':>8} {'limit':>8}")
        for row in rows:
            if row["resource"] == "*":
                self.stdout.write(f"{'* (default)':<16} {'':>8} {'':>8} {row['limit']:>8}")
            else:
                limit = "refused" if row["limit"] is None else row["limit"]
                self.stdout.write(f"{row['resource']:<16} {row['now']:>8} {row['peak']:>8} {limit:>8}")
