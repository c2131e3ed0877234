"""Accept the devices a node reported after its first report: they become verified and bookable."""

from typing import Any

from django.core.management.base import CommandError, CommandParser

from inventory.errors import InventoryError
from inventory.management.base import CodedErrorCommand
from inventory.trust import accept_devices

BAD_INPUT = 2


class Command(CodedErrorCommand):
    help = (
        "Accept NODE's unverified devices (hardware its own credential reported after its first "
        "report): all of them, or the UUIDs given. They become verified and bookable."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("node", help="Node name.")
        parser.add_argument("uuids", nargs="*", help="Device UUIDs to accept (default: all unverified).")
        parser.add_argument("--reason", default="", help="Why (kept in the node's history).")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            accepted = accept_devices(options["node"], options["uuids"] or None, reason=options["reason"])
        except InventoryError as exc:
            raise CommandError(f"{exc.code}: {exc.message}", returncode=BAD_INPUT) from exc
        if not accepted:
            self.stdout.write(f"{options['node']}: no unverified devices")
            return
        noun = "device" if len(accepted) == 1 else "devices"
        self.stdout.write(f"{options['node']}: accepted {len(accepted)} {noun}: {', '.join(accepted)}")
