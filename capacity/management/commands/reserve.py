"""Reserve capacity from the command line, as the spec's CLI does.

    manage.py reserve --tenant acme --pool h100-prod --gpus 8 --for 3d \\
        --selector "gpuProduct in (H100-SXM5-80GB), vramGiB >= 80" --nvlink
"""

from typing import Any

from django.core.management.base import CommandError, CommandParser

from capacity import services
from capacity.management.base import (
    PENDING,
    BerthCommand,
    add_request_arguments,
    admission,
    request_from_options,
)
from capacity.render import render_reservation


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

    def handle(self, *args: Any, **options: Any) -> None:
        data = self.call(request_from_options, options)
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
