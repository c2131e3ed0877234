"""Drain a node: cordon it, move every booking that has not started, list what still runs."""

from typing import Any

from django.core.management.base import CommandParser
from rest_framework.renderers import JSONRenderer

from capacity.port import BerthCommand
from maintenance.drain import drain
from maintenance.node_api import DrainSerializer, drain_data


class Command(BerthCommand):
    help = (
        "Drain NODE: cordon it, move every booking on it that has not started to other nodes, and list "
        "the running ones with their end times. Refusals (such as an unknown node) exit 2."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("node", help="Node name.")
        parser.add_argument("--reason", default="", help="Why (shown on the node page, kept in its history).")
        parser.add_argument("--json", action="store_true", help="Print what the API answers.")

    def handle(self, *args: Any, **options: Any) -> None:
        result = self.call(drain, options["node"], reason=options["reason"])
        data = drain_data(result)
        if options["json"]:
            self.stdout.write(JSONRenderer().render(DrainSerializer(data).data).decode())
            return
        until = f" until {result.until:%Y-%m-%d %H:%M} UTC" if result.until else ""
        lines = [f"node {result.node} {data['state']}{until}"]
        lines += [f"  moved reservation {pk}" for pk in result.moved]
        lines += [f"  reservation {pk} found no room: it stays, RepairPending" for pk in result.waiting]
        lines += [
            f"  running: {'reservation ' + str(r.reservation) if r.reservation else 'instance ' + str(r.instance)}"
            f" until {r.ends_at:%Y-%m-%d %H:%M} UTC"
            for r in result.running
        ]
        self.stdout.write("\n".join(lines))
