"""What if: replay demand against a changed pool with the real planner and print both sides.

manage.py simulate --pool h100-prod --synthetic 2000 --add-nodes ams1-dgx-01=16
manage.py simulate --pool h100-prod --synthetic 2000 --restore-nodes ams1-dgx-03,ams1-dgx-07 --json
manage.py simulate --pool h100-prod --synthetic 2000 --shares acme=96 --shares globex=48:24:0
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Any

from django.core.management.base import CommandParser

from capacity.port import INVALID_INPUT, CapacityError
from inventory.management.base import CodedCommand
from whatif.changes import Changes
from whatif.demand import Synthetic
from whatif.shares import parse_shares
from whatif.simulation import FIGURES, Inputs, parse_add, parse_mix, parse_weights, simulate


class Command(CodedCommand):
    help = (
        "Replay a pool's demand (the reservations created --from/--to, or --synthetic N drawn from --seed) "
        "through the real planner on an in-memory copy of the pool, as it is and with the changes asked "
        "(--add-nodes, --remove-nodes, --restore-nodes, --weights, --top-n, --placer, --shares), and print both "
        "side by side (--json: one object). Both sides count only nodes someone may book now. Writes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--pool", required=True, help="Pool slug, such as h100-prod.")
        parser.add_argument(
            "--from", dest="since", help="Recorded demand: reservations created from this day or time."
        )
        parser.add_argument("--to", dest="until", help="... until this one (ISO 8601, UTC unless it says).")
        parser.add_argument(
            "--synthetic", type=int, help="Synthetic demand: this many requests (at most 100,000)."
        )
        parser.add_argument(
            "--seed", type=int, default=1, help="Seed of the synthetic demand and the planner (1)."
        )
        parser.add_argument("--rate", type=float, default=20.0, help="Synthetic arrivals per hour (20).")
        parser.add_argument(
            "--mix", default="1:40,2:25,4:20,8:15", help="GPUS:SHARE per request size (1:40,2:25,4:20,8:15)."
        )
        parser.add_argument(
            "--gang-share", type=float, default=0.05, help="Share of gangs of 2-4 nodes × 8 GPUs (0.05)."
        )
        parser.add_argument(
            "--mean-hours", type=float, default=6.0, help="Mean duration, exponential, 1 h to 7 d (6)."
        )
        parser.add_argument("--spot-share", type=float, default=0.1, help="Share of spot requests (0.1).")
        parser.add_argument(
            "--add-nodes",
            action="append",
            default=[],
            metavar="SHAPE=COUNT",
            help="Add COUNT copies of node SHAPE (repeatable).",
        )
        parser.add_argument(
            "--remove-nodes",
            action="append",
            default=[],
            metavar="NAME|label=value",
            help="Take nodes out (repeatable).",
        )
        parser.add_argument(
            "--restore-nodes",
            action="append",
            default=[],
            metavar="NAME,...|label=value",
            help="Bring back nodes no one may book now (cordoned, in maintenance, unreachable, unhealthy, "
            "stale) on the changed side; both sides leave them out otherwise (repeatable).",
        )
        parser.add_argument(
            "--weights",
            help="Scorer weights, id=w,... (binpack, topology, fragmentation, spread, image-cached).",
        )
        parser.add_argument(
            "--top-n", type=int, help="Choose among the best N nodes (the setting's by default)."
        )
        parser.add_argument("--placer", help="inline or pool-lease.")
        parser.add_argument(
            "--shares",
            action="append",
            default=[],
            metavar="TENANT=GUARANTEED[:BORROW[:LEND]]",
            help="The changed side's shares, whole GPUs: guaranteed, borrowing limit (none: no limit), "
            "lending limit (none: all); a tenant not named is guaranteed 0. Without it the changed side "
            "keeps the pool's shares, as the baseline does (repeatable).",
        )
        parser.add_argument(
            "--horizon-days", type=int, default=14, help="How long a request may wait (14, at most 60)."
        )
        parser.add_argument("--json", action="store_true", help="Print one JSON object {baseline, changed}.")  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        inputs = self.call(inputs_from, options)
        bar = _Progress() if sys.stderr.isatty() and not options["json"] else None
        try:
            result = self.call(simulate, inputs, bar.update if bar else None)
        finally:
            if bar:
                bar.close()
        if options["json"]:
            self.print_json(result)
        else:
            self.stdout.write(table(result))


def inputs_from(options: dict) -> Inputs:
    """Return the run's inputs from the options; a malformed one is INVALID_INPUT."""
    synthetic = None
    if options["synthetic"] is not None:
        synthetic = Synthetic(
            count=options["synthetic"],
            seed=options["seed"],
            per_hour=options["rate"],
            mix=parse_mix(options["mix"]),
            gang_share=options["gang_share"],
            mean_hours=options["mean_hours"],
            spot_share=options["spot_share"],
        )
    return Inputs(
        pool=options["pool"],
        since=_moment(options["since"], "--from"),
        until=_moment(options["until"], "--to"),
        synthetic=synthetic,
        changes=Changes(
            add=parse_add(options["add_nodes"]),
            remove=_listed(options["remove_nodes"]),
            restore=_listed(options["restore_nodes"]),
            weights=parse_weights(options["weights"]) if options["weights"] else None,
            top_n=options["top_n"],
            placer=options["placer"],
            shares=parse_shares(options["shares"]),
        ),
        seed=options["seed"],
        horizon_days=options["horizon_days"],
    )


def _listed(items: list[str]) -> tuple[str, ...]:
    """Read repeated options that may each name several, comma-separated."""
    return tuple(name.strip() for item in items for name in item.split(",") if name.strip())


def _moment(text: str | None, flag: str) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise CapacityError(
            INVALID_INPUT, f"{flag}: {text!r} is not a date (2026-11-01) or ISO 8601 time"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def table(result: dict) -> str:
    """Return both sides as a text table, then each side's tenants."""
    sides = [("baseline", result["baseline"])] + (
        [("changed", result["changed"])] if result["changed"] else []
    )
    width = max(len(label) for _, label in FIGURES)
    lines = [f"{'':{width}}  " + "  ".join(f"{name:>12}" for name, _ in sides)]
    for key, label in FIGURES:
        lines.append(f"{label:{width}}  " + "  ".join(f"{side[key]:>12,}" for _, side in sides))
    if result.get("leftOut"):
        nodes = ", ".join(f"{n['node']} ({n['why']})" for n in result["leftOut"])
        lines.append(f"\ncounted on neither side (no one may book them now): {nodes}")
    if result.get("restored"):
        nodes = ", ".join(f"{n['node']} (was {n['why']})" for n in result["restored"])
        lines.append(f"\nbrought back on the changed side: {nodes}")
    for name, side in sides:
        shares = side.get("shares") or []
        said = ", ".join(_share_text(s) for s in shares) or "none"
        lines.append(f"\n{name}: tenants (shares: {said})")
        for row in side["tenants"]:
            line = (
                f"  {row['tenant']:<16} {row['requests']:>7,} requests  {row['placed']:>7,} placed  "
                f"wait p50 {row['waitP50Minutes']:>8,} p95 {row['waitP95Minutes']:>8,} min  "
                f"{row['gpuHours']:>10,} GPU-hours"
            )
            if shares:
                line += f"  {row['gpuHoursBorrowed']:>10,} borrowed  {row['reclaims']:>5,} reclaimed"
            lines.append(line)
    return "\n".join(lines)


def _share_text(row: dict) -> str:
    borrow, lend = row["borrowingLimitGpus"], row["lendingLimitGpus"]
    text = f"{row['tenant']} {row['guaranteedGpus']}"
    return (
        text
        + (f" borrowing ≤ {borrow}" if borrow is not None else "")
        + (f" lending ≤ {lend}" if lend is not None else "")
    )


class _Progress:
    """A progress bar per side on the terminal."""

    def __init__(self) -> None:
        self.bar = None
        self.side = None

    def update(self, side: str, done: int, total: int) -> None:
        from tqdm import tqdm

        if side != self.side:
            self.close()
            self.bar, self.side = tqdm(total=total, desc=side, unit="req", file=sys.stderr), side
        if done % 100 == 0 or done == total:
            self.bar.n = done
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
