"""Audit capacity: recompute rollups, scalar claims and quota charges, and report every drift."""

from django.core.management.base import BaseCommand, CommandError

from capacity.audit import audit


class Command(BaseCommand):
    help = (
        "Recompute rollups, scalar claims and quota charges from reservations and bookings; exit 1 on drift."
    )

    def handle(self, *args, **options):
        lines = audit()
        for line in lines:
            self.stdout.write(f"drift: {line}")
        if lines:
            raise CommandError(f"{len(lines)} drift(s) found", returncode=1)
        self.stdout.write("check_capacity: no drift")
