"""Preview where a request would land now, without booking anything.

manage.py preview --tenant acme --pool h100-prod --gpus 8 --for 1d --nvlink --explain
"""

from typing import Any

from django.core.management.base import CommandError, CommandParser

from capacity import services
from capacity.management.base import PENDING, BerthCommand, add_request_arguments, request_from_options


def describe(body: dict) -> list[str]:
    """Return the human-readable lines for a preview's API dict."""
    lines = []
    if body["fits"]:
        count = len(body["candidates"])
        lines.append(f"fits: {count} candidate{'s' if count != 1 else ''}, best first")
        for rank, c in enumerate(body["candidates"], 1):
            scores = ", ".join(f"{k} {v:.3f}" for k, v in sorted(c["scores"].items()))
            lines.append(f"  {rank}. {c['nodeId']}  score {c['score']:.3f}  ({scores})")
            lines.append(f"     atoms: {', '.join(c['atoms']) or '-'}")
    else:
        lines.append(f"does not fit: {body['reason']}")
        if "preemptible" in body:
            taken = body["preemptible"]
            ids = ", ".join(str(pk) for pk in taken["reservations"])
            lines.append(f"fits by preempting spot reservation(s) {ids} from {taken['startsAt']}")
        if "unsatisfiable" in body:
            lines.append(f"never fits: {body['unsatisfiable']}")
        lines.extend(f"hint: {hint}" for hint in body.get("hints", ()))
    if "rejected" in body:
        lines.append(f"rejected ({len(body['rejected'])}):")
        lines.extend(f"  {r['nodeId']}  {r['filter']}: {r['reason']}" for r in body["rejected"])
    return lines


class Command(BerthCommand):
    help = (
        "Run the placement pipeline without the commit and print the ranked candidates (node, atoms, "
        "score); with --explain every rejected node with its filter and reason. Exits 0 whether or not "
        "it fits (3 with --fail-if-no-fit); refusals print `error: CODE: message` and exit 2."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_request_arguments(parser)
        parser.add_argument("--explain", action="store_true", help="List every node turned down, and why.")
        parser.add_argument("--fail-if-no-fit", action="store_true", help="Exit 3 when nothing fits.")

    def handle(self, *args: Any, **options: Any) -> None:
        data = self.call(request_from_options, options)
        preview = self.call(services.preview, data, scope=self.scope, explain=options["explain"])
        body: dict = {"fits": preview.fits, "candidates": preview.candidates}
        if not preview.fits:
            body["reason"] = preview.reason
            if preview.preemptible is not None:
                at = preview.preemptible["startsAt"]
                body["preemptible"] = {
                    **preview.preemptible,
                    "startsAt": at.isoformat().replace("+00:00", "Z"),
                }
            if preview.hints:
                body["hints"] = preview.hints
            if preview.unsatisfiable is not None:
                body["unsatisfiable"] = preview.unsatisfiable
        if options["explain"]:
            body["rejected"] = [
                {"nodeId": r.node_id, "filter": r.filter, "reason": r.reason} for r in preview.plan.rejected
            ]
        if options["json"]:
            self.print_json(body)
        else:
            self.stdout.write("\n".join(describe(body)))
        if options["fail_if_no_fit"] and not preview.fits:
            raise CommandError(f"NO_FIT: {preview.reason}", returncode=PENDING)
