"""The capacity worker: release reservations whose window ended and retry pending ones."""

import time

from django.core.management.base import BaseCommand

from capacity import services
from inventory.models import Pool


class Command(BaseCommand):
    help = "Every --interval seconds: release ended reservations, then retry pending ones oldest first."

    def add_arguments(self, parser):
        parser.add_argument("--interval", type=float, default=10.0)
        parser.add_argument("--once", action="store_true", help="Run one round and exit.")

    def handle(self, *args, interval, once, **options):
        while True:
            expired = services.expire_ended()
            placed = services.retry_pending(Pool.objects.filter(archived=False).values_list("pk", flat=True))
            if expired or placed or once:
                self.stdout.write(f"released {expired} ended, placed {placed} pending")
            if once:
                return
            time.sleep(interval)
