"""Reserve capacity from the command line, as the spec's CLI does.

    manage.py reserve --tenant acme --pool h100-prod --gpus 8 --for 3d \\
        --selector "gpuProduct in (H100-SXM5-80GB), vramGiB >= 80" --nvlink

A series (docs/series.md): the first window, then the rule.

    manage.py reserve --tenant acme --pool h100-prod --gpus 8 --start 2027-01-04T09:00Z --for 3h \\
        --repeat weekly --on MO,WE --until 2027-03-31 [--all-or-nothing]
"""

from typing import Any

from django.core.management.base import CommandError, CommandParser

from capacity import series_hooks, services
from capacity.management.base import (
    PENDING,
    BerthCommand,
    add_request_arguments,
    admission,
    refused,
    request_from_options,
)
from capacity.placement.fields import FREQS
from capacity.render import render_reservation

SERIES_OPTIONS = ("on", "interval", "count", "until", "all_or_nothing")


def describe(data: dict, *, replay_key: str | None = None) -> list[str]:
    """Return the human-readable lines for a reservation's API dict."""
    existing = f" (existing, idempotency key {replay_key})" if replay_key else ""
    lines = [
        f"reservation {data['id']}{existing} {data['status']}: {data['tenantId']} in {data['poolId']}, "
        f"{data['start']} → {data['end']}"
    ]
    for allocation in data["allocations"]:
        claims = ", ".join(f"{k} {v}" for k, v in sorted(allocation["resources"].items()))
        lines.append(
            f"  {allocation['nodeId']}: {', '.join(allocation['atoms']) or '-'}"
            + (f" ({claims})" if claims else "")
        )
    for condition in data["conditions"]:
        if condition["type"] == services.UNSCHEDULABLE:
            lines.append(f"  reason: {condition['message']}")
    return lines


class Command(BerthCommand):
    help = (
        "Create a reservation and place it now (as an operator, for any tenant). A pending reservation "
        "is not an error: it prints the reason and exits 0 (3 with --fail-on-pending). Refusals print "
        "`error: CODE: message` and exit 2."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_request_arguments(parser)
        parser.add_argument(
            "--fail-on-pending", action="store_true", help="Exit 3 when the reservation is pending."
        )
        series = parser.add_argument_group("series (docs/series.md)")
        series.add_argument(
            "--repeat", choices=FREQS, help="Book a series: the window repeats daily or weekly."
        )
        series.add_argument("--on", help="With --repeat: the days, such as MO,WE (weekly needs them).")
        series.add_argument("--interval", type=int, help="With --repeat: every n days or weeks (default 1).")
        series.add_argument("--count", type=int, help="With --repeat: how many occurrences (at most 200).")
        series.add_argument(
            "--until", help="With --repeat: the last day (YYYY-MM-DD, UTC) or an ISO 8601 time."
        )
        series.add_argument(
            "--all-or-nothing", action="store_true", help="With --repeat: book every occurrence or none."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        data = self.call(request_from_options, options)
        if options.get("repeat"):
            # A series is the series app's to book (capacity.series_hooks).
            book_series = series_hooks.way("command")
            if book_series is None:
                raise refused("INVALID_INPUT", "--repeat: no installed app books series")
            return book_series(self, data, options, admission=admission(data["tenantId"]))
        if any(options.get(o) for o in SERIES_OPTIONS):
            raise refused(
                "INVALID_INPUT", "--on, --interval, --count, --until and --all-or-nothing need --repeat"
            )
        result = self.call(services.reserve, data, scope=self.scope, admission=admission(data["tenantId"]))
        rendered = render_reservation(result.reservation)
        if options["json"]:
            self.print_json(rendered)
        else:
            key = None if result.created else data.get("idempotencyKey")
            self.stdout.write("\n".join(describe(rendered, replay_key=key)))
        if options["fail_on_pending"] and result.reservation.status == "pending":
            reason = result.reservation.condition(services.UNSCHEDULABLE) or {}
            raise CommandError(f"PENDING: {reason.get('message', 'not placed')}", returncode=PENDING)
