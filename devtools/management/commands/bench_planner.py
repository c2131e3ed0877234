"""Benchmark the pure planner on hand-built 8-GPU node views."""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from capacity.placement import (
    Atom,
    DeviceRequest,
    NodeView,
    PlacementRequest,
    Pool,
    Resource,
    Window,
    plan_placement,
)

POOL = Pool("bench-pool")
WINDOW = Window(1_700_000_000_000, 1_700_086_400_000)


def _gpus(node_id: str, product: str) -> list[Atom]:
    return [
        Atom(
            id=f"{node_id}-GPU-{i}",
            device_class="gpu",
            numa_node=i // 4,
            index=i,
            attributes={"gpuProduct": product, "vramGiB": 80, "numaNode": i // 4},
        )
        for i in range(8)
    ]


def _links(gpus: Sequence[Atom], nvlink: bool) -> dict[str, dict[str, str]]:
    links: dict[str, dict[str, str]] = {g.id: {} for g in gpus}
    for a in gpus:
        for b in gpus:
            if a.index == b.index:
                continue
            if nvlink:
                link = "NV"
            elif a.index // 2 == b.index // 2:
                link = "PIX"
            elif a.index // 4 == b.index // 4:
                link = "PXB"
            else:
                link = "SYS"
            links[a.id][b.id] = link
    return links


def build_nodes(count: int, rng: random.Random) -> list[NodeView]:
    """Return count node views: DGX-like NVLink boards and PCIe boxes, some GPUs already booked."""
    nodes = []
    for n in range(count):
        node_id = f"node-{n:05d}"
        nvlink = rng.random() < 0.5
        gpus = _gpus(node_id, "H100-SXM5-80GB" if nvlink else "L40S")
        # A third of the nodes are idle; the rest carry between one and all eight existing bookings.
        booked = set() if rng.random() < 1 / 3 else set(rng.sample(range(8), rng.randint(1, 8)))
        nodes.append(
            NodeView(
                id=node_id,
                pool_id=POOL.id,
                labels={"rack": f"r{n // 40}"},
                devices=tuple(gpus),
                free=tuple(g for g in gpus if g.index not in booked),
                resources={"vcpu": Resource(224, 1.0, 0), "memoryGiB": Resource(2048, 1.0, 0)},
                links=_links(gpus, nvlink),
            )
        )
    return nodes


def bench_request(gpus: int) -> PlacementRequest:
    """Return the request the benchmark plans for gpus whole GPUs."""
    return PlacementRequest(
        tenant_id="acme",
        pool_id=POOL.id,
        during=WINDOW,
        devices=(DeviceRequest("gpu", gpus),),
        reservation_id="bench",
        resources={"vcpu": 8 * gpus},
    )


def run_bench(nodes_list: Sequence[int], gpus_list: Sequence[int], repeat: int, seed: int) -> dict[str, Any]:
    """Plan each request repeat times over each pool size; return the timings."""
    results = []
    for node_count in nodes_list:
        rng = random.Random(seed)
        nodes = build_nodes(node_count, rng)
        for gpus in gpus_list:
            request = bench_request(gpus)
            pick = random.Random(seed).random
            timings = []
            plan = None
            for _ in range(repeat):
                start = time.perf_counter()
                plan = plan_placement(request, nodes, POOL, random=pick)
                timings.append((time.perf_counter() - start) * 1000)
            assert plan is not None
            mean = statistics.fmean(timings)
            results.append(
                {
                    "nodes": node_count,
                    "gpus": gpus,
                    "repeat": repeat,
                    "p50_ms": round(statistics.median(timings), 3),
                    "mean_ms": round(mean, 3),
                    "min_ms": round(min(timings), 3),
                    "nodes_per_s": round(node_count / (mean / 1000)),
                    "fitting": len(plan.ranked),
                }
            )
    return {"seed": seed, "results": results}


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


class Command(BaseCommand):
    help = "Time plan_placement over hand-built pools of 8-GPU nodes."
    # The planner is pure: no database, so there is nothing for the system checks to check.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--nodes", type=_ints, default=[1000, 10000], help="Pool sizes, e.g. 1000,10000.")
        parser.add_argument(
            "--gpus", type=_ints, default=[1, 2, 4, 8], help="GPUs per request, e.g. 1,2,4,8."
        )
        parser.add_argument("--repeat", type=int, default=20, help="Plans per (nodes, gpus).")
        parser.add_argument("--seed", type=int, default=1, help="Seed for bookings and the top-N pick.")

    def handle(self, *args: Any, **options: Any) -> None:
        report = run_bench(options["nodes"], options["gpus"], options["repeat"], options["seed"])
        for row in report["results"]:
            self.stdout.write(
                f"{row['nodes']:>6} nodes  {row['gpus']} gpu  p50 {row['p50_ms']:8.2f} ms  "
                f"mean {row['mean_ms']:8.2f} ms  {row['nodes_per_s']:>9,} nodes/s  ({row['fitting']} fit)"
            )
        self.stdout.write(json.dumps(report))
