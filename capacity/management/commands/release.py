"""Release a reservation: its bookings end now and its quota is refunded."""

from typing import Any

from django.core.management.base import CommandParser

from capacity import services
from capacity.management.base import BerthCommand
from capacity.render import render_reservation


class Command(BerthCommand):
    help = "Release reservation ID (as an operator). Releasing twice is fine. Refusals exit 2."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("id", help="Reservation id.")
        parser.add_argument("--json", action="store_true", help="Print the API's JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        reservation = self.call(services.release, options["id"], scope=self.scope)
        if options["json"]:
            self.print_json(render_reservation(reservation))
        else:
            self.stdout.write(
                f"reservation {reservation.pk} released at {reservation.released_at.isoformat()}"
            )
