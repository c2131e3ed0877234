"""Benchmark placements (inline or pool-lease) on a pool of 8-GPU nodes and verify nothing was double-booked."""

import json

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from capacity.placers.types import INLINE, PLACERS, POOL_LEASE
from devtools.bench.earliest_timing import run_earliest
from devtools.bench.placements import BUILD_CHUNK, run
from devtools.bench.policy_check import run_policy_check
from devtools.bench.preempt import run_preemption
from devtools.bench.repair import run_repair


class Command(BaseCommand):
    help = (
        "Build pool bench-<nodes> (8 GPUs, vcpu and memoryGiB per node), place --count seeded requests of "
        "1/2/4/8 GPUs from --clients connections, and print throughput, latency, queries per placement."
    )

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=1000)
        parser.add_argument("--count", type=int, default=2000)
        parser.add_argument("--clients", type=int, default=1)
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--previews", type=int, default=100)
        parser.add_argument(
            "--one-tenant", action="store_true", help="every client books as the one tenant bench-0"
        )
        parser.add_argument(
            "--shares",
            type=int,
            default=0,
            metavar="TENANTS",
            help="give this many tenants even shares of the pool, and spread the requests over them",
        )
        parser.add_argument(
            "--windows",
            type=int,
            default=0,
            help="schedule this many 12-hour maintenance windows (one node each) over the two weeks first",
        )
        parser.add_argument(
            "--placer",
            choices=PLACERS,
            default=INLINE,
            help="pool-lease: clients queue, a forked placer process places in batches",
        )
        parser.add_argument(
            "--repair",
            type=int,
            metavar="BOOKINGS",
            help="Repair run: book this many future windows on one node, put it in maintenance, time the repair.",
        )
        parser.add_argument(
            "--earliest",
            type=int,
            metavar="BOOKINGS",
            help="Earliest-start run: book this many windows over the next three days, then time "
            "--previews earliest-start queries and check a sample against preview.",
        )
        parser.add_argument(
            "--policy-check",
            type=float,
            metavar="MS",
            help="Policy run: place --count requests from --clients threads with no policy, with the pool"
            " policy's limits, and with them and an outside check on 127.0.0.1 answering in MS ms.",
        )
        parser.add_argument(
            "--spot-fill",
            type=float,
            help="Preemption run: fill this share of the nodes with spot work and the rest with regular "
            "work for a day, then preview and place --count regular requests that must take spot work back.",
        )

    def handle(
        self,
        *args,
        nodes,
        count,
        clients,
        seed,
        previews,
        placer,
        spot_fill,
        repair,
        earliest,
        one_tenant,
        shares,
        windows,
        policy_check,
        **options,
    ):
        def bar(items):
            return tqdm(items, desc="building nodes", unit=f"×{BUILD_CHUNK} nodes", file=self.stderr._out)

        if repair is not None:
            figures = run_repair(nodes, repair, seed, progress=bar)
            self.stdout.write(
                f"{figures['repairs_per_s']} repairs/s: {figures['repaired']} of {figures['bookings_on_failed_node']} "
                f"bookings moved off a failed node in {figures['seconds']} s ({figures['left_on_failed_node']} left "
                f"on it) in a {figures['nodes']}-node pool\n"
                f"double-booked devices: {figures['double_booked']}; check_capacity drift: {figures['drift']}"
            )
            return self.finish(figures)
        if earliest is not None:
            figures = run_earliest(nodes, earliest, previews, seed, progress=bar)
            self.stdout.write(
                f"earliest start p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms over {figures['queries']} "
                f"queries ({figures['answers_after_requested_start']} answered a later start, p50 "
                f"{figures['searched_p50_ms']} ms) on "
                f"{figures['nodes']} nodes with {figures['bookings']} bookings; gang of 4 x 8 GPUs "
                f"{figures['gang_of_4x8_ms']} ms; {figures['checked_against_preview']} answers checked against "
                f"preview, {len(figures['errors'])} wrong\n"
                f"double-booked devices: {figures['double_booked']}; check_capacity drift: {figures['drift']}"
            )
            return self.finish(figures)
        if policy_check is not None:
            figures = run_policy_check(nodes, count, clients, seed, policy_check, progress=bar)
            for name in ("no_policy", "policy", "policy_and_check"):
                f = figures[name]
                self.stdout.write(
                    f"{name}: {f['placements_per_s']} placements/s ({f['placed']} placed), latency p50 "
                    f"{f['p50_ms']} ms, p95 {f['p95_ms']} ms, {f['statements_per_request']} statements per request"
                )
            self.stdout.write(
                f"{count} requests from {clients} client(s) on {nodes} nodes, check answering in {policy_check} ms\n"
                f"double-booked devices: {figures['double_booked']}; check_capacity drift: {figures['drift']}"
            )
            return self.finish(figures)
        if spot_fill is not None:
            if not 0 < spot_fill <= 1:
                raise CommandError("--spot-fill must be above 0 and at most 1")
            return self.preemption(nodes, count, seed, spot_fill, previews, bar)

        figures = run(
            nodes,
            count,
            clients,
            seed,
            previews,
            progress=bar,
            placer=placer,
            one_tenant=one_tenant,
            shares=shares,
            windows=windows,
        )
        self.stdout.write(
            f"{figures['placements_per_s']} placements/s over {figures['requests']} requests "
            f"({figures['placed']} placed, {figures['pending']} pending, {figures['lost_races']} lost races) "
            f"on {figures['nodes']} nodes with {figures['clients']} client(s) of {figures['tenants']} tenant(s), "
            f"{placer} placer"
            + (f", {shares} tenants with shares ({figures['borrowing']} borrowing)" if shares else "")
            + (
                f", {windows} maintenance windows ({figures['placed_inside_windows']} placements inside one)"
                if windows
                else ""
            )
            + "\n"
            f"latency p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms; "
            f"{figures['queries_per_placement']} queries per placement\n"
            + (
                f"queued to placed p50 {figures['queued_p50_ms']} ms, p95 {figures['queued_p95_ms']} ms\n"
                if placer == POOL_LEASE
                else ""
            )
            + (
                f"{figures['batches']} batches, mean {figures['mean_batch']} requests "
                f"({figures['batch_sizes']}); {figures['lost_races_in_batches']} lost races in batches\n"
                if placer == POOL_LEASE
                else ""
            )
            + f"CPU s: {figures['cpu_s']} = {figures['cpu_ms_per_request']} ms per request\n"
            + f"preview p50 {figures['preview_p50_ms']} ms (explain: {figures['preview_explain_p50_ms']} ms)\n"
            f"double-booked devices: {figures['double_booked']}; check_capacity drift: {figures['drift']}"
        )
        self.finish(figures)

    def preemption(self, nodes, count, seed, spot_fill, previews, bar):
        figures = run_preemption(nodes, count, seed, spot_fill, previews, progress=bar)
        self.stdout.write(
            f"{figures['placements_per_s']} placements/s, {figures['preemptions_per_s']} preemptions/s over "
            f"{figures['requests']} regular requests ({figures['placed']} placed, "
            f"{figures['placed_by_preempting']} by preempting {figures['spot_reservations_preempted']} spot "
            f"reservations) on {figures['nodes']} nodes, {figures['spot_nodes']} of them full of spot work\n"
            f"latency p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms\n"
            f"preview with preemptible p50 {figures['preview_p50_ms']} ms, p95 {figures['preview_p95_ms']} ms "
            f"({figures['previews_with_preemptible']} of {figures['previews']} offered spot work)\n"
            f"double-booked devices: {figures['double_booked']}; check_capacity drift: {figures['drift']}"
        )
        self.finish(figures)

    def finish(self, figures):
        self.stdout.write(json.dumps(figures))
        if figures["double_booked"] or figures["drift"] or figures["errors"]:
            raise CommandError("the benchmark found double bookings, drift or errors", returncode=1)
