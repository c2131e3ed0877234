"""Benchmark the audit: rows and statements per booking and node report, and a month's export."""

import json

from django.core.management.base import BaseCommand

from devtools.bench.audit import booking_costs, export_month, report_costs


class Command(BaseCommand):
    help = (
        "Book and release --bookings-timed reservations through the API (statements and reservation events "
        "each), post node reports from --nodes agents (history rows per report), then export a month of "
        "--bookings bookings page by page (p50, p95); print the figures and a JSON summary line."
    )

    def add_arguments(self, parser):
        parser.add_argument("--bookings", type=int, default=100_000)
        parser.add_argument("--bookings-timed", type=int, default=50)
        parser.add_argument("--nodes", type=int, default=20)
        parser.add_argument("--page-size", type=int, default=500)

    def handle(self, *args, bookings, bookings_timed, nodes, page_size, **options):
        figures = {
            "booking": booking_costs(bookings_timed),
            "reports": report_costs(nodes),
            "export": export_month(bookings, page_size),
        }
        b, r, e = figures["booking"], figures["reports"], figures["export"]
        self.stdout.write(
            f"per booking: {b['statementsPerBooking']} statements ({b['stampStatementsPerBooking']} added to name actor "
            f"and request), {b['eventsPerBooking']} audit rows (reservation events)"
        )
        self.stdout.write(
            f"per release: {b['statementsPerRelease']} statements ({b['stampStatementsPerRelease']} added to name them), "
            f"{b['eventsPerRelease']} audit rows"
        )
        self.stdout.write(
            f"per node report: {r['historyRowsPerChangingReport']} history rows when it changed something, "
            f"{r['historyRowsPerRepeatedReport']} when it did not"
        )
        self.stdout.write(
            f"a month of {e['bookings']} bookings ({e['events']} events), pages of {e['pageSize']}:"
        )
        for name in ("json", "csv", "oneActor"):
            f = e[name]
            self.stdout.write(
                f"  {name:<9} {f['rows']:>8} rows {f['pages']:>5} pages  p50 {f['p50Ms']:>7} ms"
                f"  p95 {f['p95Ms']:>7} ms  {f['totalS']:>6} s"
            )
        self.stdout.write(json.dumps(figures))
