"""Import a node's `nvidia-smi topo -m` output, or a whole node report (JSON), into inventory."""

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from inventory.fleet import FleetOptions, import_fleet
from inventory.fleet_files import NodeFiles
from inventory.ingest import IngestError, apply_node_report
from inventory.management.base import CodedErrorCommand
from inventory.models import Node
from inventory.topology import RANKS, TopologyParseError, parse_topo_matrix
from inventory.trust import Reporter
from inventory.words import counted

# Bad input of any kind, as opposed to 1 for a crash.
BAD_INPUT = 2


def _fail(code: str, message: str) -> CommandError:
    return CommandError(f"{code}: {message}", returncode=BAD_INPUT)


# What the command says of a report, in this order (the API says all of ReportResult.as_json).
REPORT_COUNTS = ("devices", "created", "markedUnhealthy", "becameHealthy", "labelsSet", "labelsRemoved")


class Command(CodedErrorCommand):
    help = (
        "Import FILE for node NODE: a JSON node report (devices, labels, topology) or the text of "
        "`nvidia-smi topo -m`. FILE '-' reads standard input. A matrix whose GPU count differs from the "
        "node's is refused unless --replace-devices; NUMA nodes the matrix does not give are cleared "
        "unless --keep-numa; `nvidia-smi topo -mp` output is refused (it hides NVLink)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("node", help="Node name.")
        parser.add_argument("file", help="Path of the report or matrix; '-' for standard input.")
        parser.add_argument("--json", action="store_true", help="Print a JSON summary.")
        parser.add_argument(
            "--replace-devices",
            action="store_true",
            help="Accept a matrix with fewer GPUs than the node (the others are marked unhealthy).",
        )
        parser.add_argument(
            "--keep-numa", action="store_true", help="Keep NUMA nodes the matrix does not give."
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Print what would change (devices, links); store nothing."
        )

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
        if report is not None:
            # These shape a matrix import; a report is applied as it stands (there is no dry run).
            given = [
                f"--{f.replace('_', '-')}" for f in ("dry_run", "replace_devices", "keep_numa") if options[f]
            ]
            if given:
                raise _fail(
                    "INVALID_INPUT", f"{', '.join(given)} apply to a topology matrix, not to a node report"
                )
        try:
            if report is not None:
                # Whoever runs manage.py is an operator: full rights (inventory.trust).
                result = apply_node_report(node, report, by=Reporter.operator("manage.py import_topology"))
                answer = result.as_json()
                summary: dict[str, Any] = {
                    "node": node.name,
                    "kind": "report",
                    "links": result.links,
                    **{k: answer[k] for k in REPORT_COUNTS},
                }
                if result.links is not None:
                    summary["linkRanks"] = parse_topo_matrix(report["topology"]).rank_counts()
            else:
                matrix = parse_topo_matrix(text)
                self._import_matrix(node, text, options)
                summary = {
                    "node": node.name,
                    "kind": "topology",
                    "links": len(matrix.links),
                    "linkRanks": matrix.rank_counts(),
                    "devices": len(matrix.gpus),
                }
        except IngestError as exc:
            raise _fail(exc.code, str(exc)) from exc
        except TopologyParseError as exc:
            raise _fail("INVALID_INPUT", str(exc)) from exc

        if options["dry_run"]:
            summary["dryRun"] = True
        self.stdout.write(json.dumps(summary, sort_keys=True) if options["json"] else _describe(summary))

    def _import_matrix(self, node: Node, text: str, options: dict[str, Any]) -> None:
        """Import the matrix through the fleet import (the same checks)."""
        label = "stdin" if options["file"] == "-" else options["file"]
        files = NodeFiles(name=node.name, topo=text, labels={"topo": label})
        fleet_options = FleetOptions(
            dry_run=options["dry_run"],
            replace_devices=options["replace_devices"],
            keep_numa=options["keep_numa"],
        )
        (result,) = import_fleet([files], fleet_options).nodes
        if result.diff is None:
            raise _fail(result.code or "INVALID_INPUT", result.message or "refused")
        if options["dry_run"]:
            for part in (result.diff.devices, result.diff.links):
                for kind in ("added", "changed", "removed"):
                    for line in part[kind]:
                        self.stdout.write(f"  {line}")

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
        links = counted(summary["links"], "link") + (f" ({by_rank})" if by_rank else "")
    line = f"node {summary['node']}: {links}, {counted(summary['devices'], 'device')}"
    if summary.get("dryRun"):
        line = f"dry run, nothing stored: {line}"
    if summary["kind"] == "report":
        line += (
            f" ({summary['created']} new, {summary['becameHealthy']} now healthy,"
            f" {summary['markedUnhealthy']} marked unhealthy),"
            f" {counted(summary['labelsSet'], 'label')} set, {summary['labelsRemoved']} removed"
        )
    return line
