"""Audit capacity: recompute rollups, scalar claims, quota charges and booked hours; report every drift."""

from django.core.management.base import BaseCommand, CommandError

from capacity.audit import audit


class Command(BaseCommand):
    help = (
        "Recompute rollups, scalar claims, quota charges and booked hours from reservations and bookings; "
        "exit 1 on drift."
    )

    def handle(self, *args, **options):
        lines = audit()
        for line in lines:
            self.stdout.write(f"drift: {line}")
        if lines:
            raise CommandError(f"{len(lines)} drift(s) found", returncode=1)
        self.stdout.write("check_capacity: no drift")
