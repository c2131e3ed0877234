"""Cordon a node: the placer stops using it; what it runs stays."""

from typing import Any

from django.core.management.base import CommandParser

from capacity.port import BerthCommand, node_detail
from inventory import services as inventory


class Command(BerthCommand):
    help = "Cordon NODE: no new placements. Refusals (such as an unknown node) exit 2."
    action = staticmethod(inventory.cordon)
    done = "cordoned"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("node", help="Node name.")
        parser.add_argument("--reason", default="", help="Why (kept in the node's history).")
        parser.add_argument("--json", action="store_true", help="Print the node as the API shows it.")

    def handle(self, *args: Any, **options: Any) -> None:
        node = self.call(self.action, options["node"], reason=options["reason"])
        if options["json"]:
            self.print_json(node_detail(node.name))
        else:
            self.stdout.write(f"node {node.name} {self.done}")
