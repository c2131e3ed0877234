"""Import a whole fleet's nvidia-smi outputs: one directory per node, or a tar file of the same."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser
from tqdm import tqdm

from inventory.fleet import FleetOptions, FleetResult, NodeResult, import_fleet
from inventory.fleet_files import FleetReadError, read_fleet
from inventory.fleet_read import FleetInputError
from inventory.management.base import CodedErrorCommand
from inventory.words import counted

# Bad input of any kind, as opposed to 1 for a crash; also when any node failed.
BAD_INPUT = 2


class Command(CodedErrorCommand):
    help = (
        "Import PATH, a directory with one subdirectory per node (named by the node) holding "
        "nvidia-smi-q.xml (`nvidia-smi -q -x`), nvidia-smi-L.txt (`nvidia-smi -L`) and topo-m.txt "
        "(`nvidia-smi topo -m`), or a tar file of the same. Creates nodes and devices that do not exist, "
        "updates the others; each node in its own transaction. Exits 2 when any node failed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="Fleet directory or tar file.")
        parser.add_argument("--pool", help="Pool slug for new nodes (existing nodes must already be in it).")
        parser.add_argument("--dry-run", action="store_true", help="Print the diff per node; store nothing.")
        parser.add_argument(
            "--replace-devices",
            action="store_true",
            help="Accept files whose GPU count differs from the node's (left-out GPUs are marked unhealthy).",
        )
        parser.add_argument(
            "--keep-numa",
            action="store_true",
            help="Keep NUMA nodes that topo-m.txt does not give (by default they are cleared).",
        )
        parser.add_argument("--json", action="store_true", help="Print the per-node results as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            nodes = read_fleet(options["path"])
        except FleetReadError as exc:
            raise CommandError(f"INVALID_INPUT: {exc}", returncode=BAD_INPUT) from exc
        fleet_options = FleetOptions(
            pool=options["pool"],
            dry_run=options["dry_run"],
            replace_devices=options["replace_devices"],
            keep_numa=options["keep_numa"],
        )
        # A bar on a terminal only: piped or captured output gets just the diff and the summary.
        err = getattr(self.stderr, "_out", self.stderr)
        bar = tqdm(total=len(nodes), unit="node", file=err, disable=not _isatty(err))

        def advance(result: NodeResult) -> None:
            bar.set_postfix_str(result.name, refresh=False)
            bar.update(1)

        try:
            result = import_fleet(nodes, fleet_options, on_node=advance)
        except FleetInputError as exc:
            raise CommandError(f"{exc.code}: {exc.message}", returncode=BAD_INPUT) from exc
        finally:
            bar.close()

        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "dryRun": result.dry_run,
                        "summary": result.summary(),
                        "nodes": [n.as_dict() for n in result.nodes],
                    },
                    indent=2,
                )
            )
        else:
            self.stdout.write(describe(result, verbose=fleet_options.dry_run or options["verbosity"] >= 2))
        if result.failed:
            raise CommandError(
                f"IMPORT_FAILED: {len(result.failed)} of {counted(len(result.nodes), 'node')} failed",
                returncode=BAD_INPUT,
            )


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def describe(result: FleetResult, *, verbose: bool) -> str:
    """Return the per-node lines (with every diff line when `verbose`) and the summary line."""
    lines = []
    for node in result.nodes:
        if node.diff is None:
            lines.append(f"{node.name}: failed: {node.message}")
            continue
        diff = node.diff
        head = "new node" if diff.node == "added" else "node"
        counts = "; ".join(
            f"{part}: {len(d['added'])} added, {len(d['changed'])} changed, {len(d['removed'])} removed"
            for part, d in (("devices", diff.devices), ("links", diff.links))
        )
        lines.append(f"{node.name} ({head} in pool {diff.pool}): {counts}")
        if verbose:
            for part in (diff.devices, diff.links):
                for kind in ("added", "changed", "removed"):
                    lines.extend(f"  {line}" for line in part[kind])
    lines.append(result.summary())
    return "\n".join(lines)
