"""Schedule, list or delete maintenance windows (the API's /api/v1/maintenance, from the shell)."""

from typing import Any

from django.core.management.base import CommandParser

from capacity.port import BerthCommand
from maintenance import windows as maintenance


class Command(BerthCommand):
    help = (
        "Maintenance windows. `schedule --nodes A,B | --pool P --start ISO --end ISO [--reason R] [--move]` "
        "keeps new work off the nodes over the window and lists the bookings it overlaps; `list [--pool P] "
        "[--node N]`; `delete ID`. Bad input exits 2 with INVALID_INPUT naming the field."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=("schedule", "list", "delete"))
        parser.add_argument("window", nargs="?", help="The window's id (delete).")
        parser.add_argument("--nodes", help="Node names, comma-separated.")
        parser.add_argument("--pool", help="Pool slug: every node of it (schedule), or a filter (list).")
        parser.add_argument("--node", help="List the windows on this node.")
        parser.add_argument("--start", help="ISO 8601 with a zone, such as 2026-12-08T00:00Z.")
        parser.add_argument("--end", help="ISO 8601 with a zone; after --start.")
        parser.add_argument("--reason", default="", help="Why (shown in the explain and on the pages).")
        parser.add_argument(
            "--move", action="store_true", help="Move the overlapping bookings off, as drain."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "delete":
            self.call(maintenance.cancel, options["window"])
            self.stdout.write(f"deleted maintenance window {options['window']}")
            return
        if action == "list":
            found = list(self.call(maintenance.windows, pool=options["pool"], node=options["node"]))
            names = maintenance.node_names(found)
            for w in found:
                self.stdout.write(f"{w.pk}  {w.starts_at:%Y-%m-%d %H:%M} – {w.ends_at:%Y-%m-%d %H:%M} UTC  "
                                  f"{', '.join(names[w.pk])}  {w.reason}".rstrip())  # fmt: skip
            return
        body: dict[str, Any] = {"reason": options["reason"], "move": options["move"]}
        for name in ("start", "end", "pool"):
            if options[name] is not None:
                body[name] = options[name]
        if options["nodes"] is not None:
            body["nodes"] = [n.strip() for n in options["nodes"].split(",") if n.strip()]
        result = self.call(maintenance.schedule, body, by=self.actor())
        w = result.window
        lines = [f"maintenance window {w.pk}: {w.starts_at:%Y-%m-%d %H:%M} – {w.ends_at:%Y-%m-%d %H:%M} UTC"]
        lines += [
            f"  overlaps {'reservation ' + str(o.reservation) if o.reservation else 'instance ' + str(o.instance)}"
            f" on {o.node}, {o.start:%Y-%m-%d %H:%M} – {o.end:%Y-%m-%d %H:%M} UTC"
            for o in result.overlaps
        ]
        lines += [f"  moved reservation {pk}" for pk in result.moved]
        lines += [f"  reservation {pk} found no room: it stays, RepairPending" for pk in result.waiting]
        lines += [f"  told reservation {pk}: its GPUs there go at the window's start" for pk in result.told]
        self.stdout.write("\n".join(lines))
