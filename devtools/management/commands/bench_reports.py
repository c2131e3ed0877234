"""Benchmark node reports: a fleet of agents reporting nvidia-smi's texts, with news and without."""

import json

from django.core.management.base import BaseCommand
from tqdm import tqdm

from devtools.bench.reports import run_reports


class Command(BaseCommand):
    help = (
        "Build pool bench-reports with --nodes empty nodes and their node credentials, then post --rounds "
        "rounds of agent reports (8 × H100 nvidia-smi texts each): round 1 creates the devices, the later "
        "rounds change nothing and must write nothing. Prints reports/s, CPU ms and statements per report."
    )

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=1000)
        parser.add_argument("--rounds", type=int, default=3)

    def handle(self, *args, nodes, rounds, **options):
        def bar(items, number):
            return tqdm(items, desc=f"round {number}", unit="report", file=self.stderr._out)

        figures = run_reports(nodes, rounds, progress=bar)
        for r in figures["rounds"]:
            self.stdout.write(
                f"round {r['round']}: {r['reports']} reports, {r['reportsPerSecond']}/s, p50 {r['p50Ms']} ms, "
                f"p95 {r['p95Ms']} ms, CPU {r['cpuMsPerReport']} ms, {r['statementsPerReport']} statements, "
                f"{r['inventoryWritesPerReport']} inventory writes, generation bumped: {r['generationBumped']}"
            )
        self.stdout.write(json.dumps(figures))
