"""Import a node's `nvidia-smi topo -m` output, or a whole node report (JSON), into inventory."""

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from inventory.ingest import IngestError, apply_node_report, sync_device_links
from inventory.management.base import CodedErrorCommand
from inventory.models import Node
from inventory.topology import RANKS, TopologyParseError, parse_topo_matrix

# Bad input of any kind, as opposed to 1 for a crash.
BAD_INPUT = 2


def _fail(code: str, message: str) -> CommandError:
    return CommandError(f"{code}: {message}", returncode=BAD_INPUT)


class Command(CodedErrorCommand):
    help = (
        "Import FILE for node NODE: a JSON node report (devices, labels, topology) or the text of "
        "`nvidia-smi topo -m`. FILE '-' reads standard input."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("node", help="Node name.")
        parser.add_argument("file", help="Path of the report or matrix; '-' for standard input.")
        parser.add_argument("--json", action="store_true", help="Print a JSON summary.")

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["node"]
        node = Node.objects.filter(name=name).first()
        if node is None:
            raise _fail("NOT_FOUND", f"no node named {name!r}")
        text = self._read(options["file"])

        try:
            report = json.loads(text)
        except ValueError:
            report = None
        try:
            if report is not None:
                result = apply_node_report(node, report)
                summary: dict[str, Any] = {
                    "node": node.name,
                    "kind": "report",
                    "links": result.links,
                    "devices": result.devices,
                    "created": result.created,
                    "markedUnhealthy": result.marked_unhealthy,
                    "becameHealthy": result.became_healthy,
                    "labelsSet": result.labels_set,
                    "labelsRemoved": result.labels_removed,
                }
                if result.links is not None:
                    summary["linkRanks"] = parse_topo_matrix(report["topology"]).rank_counts()
            else:
                matrix = parse_topo_matrix(text)
                links = sync_device_links(node, matrix)
                summary = {
                    "node": node.name,
                    "kind": "topology",
                    "links": links,
                    "linkRanks": matrix.rank_counts(),
                    "devices": len(matrix.gpus),
                }
        except IngestError as exc:
            raise _fail(exc.code, str(exc)) from exc
        except TopologyParseError as exc:
            raise _fail("INVALID_INPUT", str(exc)) from exc

        self.stdout.write(json.dumps(summary, sort_keys=True) if options["json"] else _describe(summary))

    def _read(self, path: str) -> str:
        if path == "-":
            return sys.stdin.read()
        try:
            return Path(path).read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise _fail("NOT_FOUND", f"no file {path!r}") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise _fail("INVALID_INPUT", f"cannot read {path!r}: {exc}") from exc


def _describe(summary: dict[str, Any]) -> str:
    """Return the one-line summary, such as `node dgx-01: 28 links (28 NV), 8 devices`."""
    if summary["links"] is None:
        links = "links unchanged"
    else:
        ranks = summary.get("linkRanks", {})
        by_rank = ", ".join(f"{ranks[rank]} {rank}" for rank in RANKS if rank in ranks)
        links = f"{summary['links']} links" + (f" ({by_rank})" if by_rank else "")
    line = f"node {summary['node']}: {links}, {summary['devices']} devices"
    if summary["kind"] == "report":
        line += (
            f" ({summary['created']} new, {summary['becameHealthy']} now healthy,"
            f" {summary['markedUnhealthy']} marked unhealthy),"
            f" {summary['labelsSet']} labels set, {summary['labelsRemoved']} removed"
        )
    return line
