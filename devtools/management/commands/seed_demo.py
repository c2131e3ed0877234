"""Build the demo pools, nodes, tenants and bookings; safe to run again."""

from django.core.management.base import BaseCommand
from tqdm import tqdm

from devtools.demo import build_demo, demo_password


class Command(BaseCommand):
    help = "Create the demo data set (two sites, three pools, 62 nodes, tenants acme and globex)."

    def add_arguments(self, parser):
        parser.add_argument("--no-progress", action="store_true", help="Do not draw a progress bar.")

    def handle(self, *args, no_progress=False, **options):
        def bar(items):
            return tqdm(items, desc="nodes", unit="node", disable=no_progress, file=self.stderr._out)

        result = build_demo(progress=bar)
        self.stdout.write(
            f"demo ready: {result['pools']} pools, {result['nodes']} nodes, "
            f"{result['new_bookings']} new bookings; users operator, acme, globex "
            f"(password {demo_password()!r})"
        )
