"""Print the earliest start at which a request's whole window fits, without booking anything.

manage.py earliest --tenant acme --pool h100-prod --gpus 8 --for 12h --horizon 30d
"""

from typing import Any

from django.core.management.base import CommandError, CommandParser

from capacity.management.base import PENDING, BerthCommand, add_request_arguments, request_from_options
from capacity.services.earliest_start import earliest
from capacity.services.hints import horizon_text


def iso(moment) -> str:
    return moment.isoformat().replace("+00:00", "Z")


class Command(BerthCommand):
    help = (
        "Find the earliest start, from the requested one up to --horizon after it (14d by default, at "
        "most 90d), at which the request fits, and print it with the node(s) and atoms it would take. "
        "Exits 0 (3 with --fail-if-no-fit when nothing fits); refusals print `error: CODE: message` "
        "and exit 2."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_request_arguments(parser)
        parser.add_argument("--horizon", help="How far ahead to look: 36h, 30d (default 14d, at most 90d).")
        parser.add_argument("--fail-if-no-fit", action="store_true", help="Exit 3 when nothing fits.")

    def handle(self, *args: Any, **options: Any) -> None:
        data = self.call(request_from_options, options)
        if options["horizon"]:
            data = {**data, "horizon": options["horizon"]}
        answer = self.call(earliest, data, scope=self.scope)
        body: dict = {
            "fits": answer.fits,
            "candidates": answer.candidates,
            "horizon": horizon_text(answer.horizon),
        }
        if answer.fits:
            body["start"], body["end"] = iso(answer.start), iso(answer.end)
        else:
            body["reason"] = answer.reason
        if options["json"]:
            self.print_json(body)
        elif answer.fits:
            lines = [f"earliest start: {body['start']} (until {body['end']})"]
            lines.extend(
                f"  {c['nodeId']}  atoms: {', '.join(c['atoms']) or '-'}" for c in answer.candidates[:3]
            )
            self.stdout.write("\n".join(lines))
        else:
            self.stdout.write(f"does not fit: {answer.reason}")
        if options["fail_if_no_fit"] and not answer.fits:
            raise CommandError(f"NO_FIT: {answer.reason}", returncode=PENDING)
