"""`manage.py reserve --repeat`: a series from the command line (docs/series.md, docs/cli.md).

capacity's `reserve` command reads the request and hands `--repeat` here (capacity.series_hooks);
this books the series as the API does (the same rule and limits) and prints each occurrence.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError
from django.core.serializers.json import DjangoJSONEncoder

from capacity.port import PENDING, BerthCommand, CapacityError, refused
from inventory.changelog import recording

from .book import SeriesNotPlaced, reserve_series
from .render import occurrence_items, series_data


def book_from_command(command: BerthCommand, data: dict, options: dict[str, Any], *, admission: Any) -> None:
    """Book a series as the API does (the same rule and limits), and print each occurrence."""
    repeat: dict[str, Any] = {"freq": options["repeat"]}
    if options.get("on") is not None:
        repeat["byDay"] = [d.strip().upper() for d in options["on"].split(",") if d.strip()]
    for name in ("interval", "count", "until"):
        if options.get(name) is not None:
            repeat[name] = options[name]
    data = {**data, "repeat": repeat, **({"allOrNothing": True} if options["all_or_nothing"] else {})}
    try:
        with recording(actor=command.actor()):
            result = reserve_series(data, scope=command.scope, admission=admission, by=command.actor())
    except SeriesNotPlaced as missed:
        lines = [
            f"  {o['start']} {o['status']}: {o.get('reason', '')}"
            for o in occurrence_items(missed.occurrences)
        ]
        command.stderr.write("\n".join(lines))
        raise refused(missed.code, missed.message) from None
    except CapacityError as err:
        raise refused(err.code, err.message) from None
    rendered = series_data(result.series, result.occurrences)
    if options["json"]:
        command.print_json(json.loads(json.dumps(rendered, cls=DjangoJSONEncoder)))
    else:
        replay = "" if result.created else f" (existing, idempotency key {data.get('idempotencyKey')})"
        lines = [
            f"series {rendered['id']}{replay}: {rendered['rule']}, {len(rendered['occurrences'])} occurrences"
        ]
        lines += [
            f"  {o['start']} reservation {o['reservationId']} {o['status']}"
            + (f": {o['reason']}" if o.get("reason") else "")
            for o in rendered["occurrences"]
        ]
        command.stdout.write("\n".join(lines))
    if options["fail_on_pending"] and any(o.status != "placed" for o in result.occurrences):
        raise CommandError("PENDING: some occurrences are pending", returncode=PENDING)
