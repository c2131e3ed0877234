"""Audit capacity: recompute rollups, scalar claims, quota charges and booked hours; report every drift."""

from django.core.management.base import BaseCommand, CommandError

from capacity.audit import audit
from capacity.checks import other_problems


class Command(BaseCommand):
    help = (
        "Recompute rollups, scalar claims, quota charges and booked hours from reservations and bookings, and run"
        " the checks other apps add (the Slurm bridge's); exit 1 on drift or a problem."
    )

    def handle(self, *args, **options):
        lines = audit()
        for line in lines:
            self.stdout.write(f"drift: {line}")
        problems = other_problems()
        for line in problems:
            self.stdout.write(f"problem: {line}")
        if lines or problems:
            found = [f"{len(lines)} drift(s) found"] if lines else []
            found += [f"{len(problems)} problem(s) found"] if problems else []
            raise CommandError(", ".join(found), returncode=1)
        self.stdout.write("check_capacity: no drift")
