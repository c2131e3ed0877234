"""`manage.py slurm_sync`: one reconcile pass between Berth and its Slurm cluster (docs/slurm.md)."""

from django.core.management.base import BaseCommand, CommandError

from slurm.reconcile import run_pass


class Command(BaseCommand):
    help = (
        "Make Slurm match Berth once: create missing berth-* reservations, fix those that differ, end those"
        " Berth no longer holds; bring Slurm's node states and hand-made reservations back. Exit 1 on problems."
    )

    def handle(self, *args, **options):
        outcome = run_pass()
        for _, message in outcome.problems:
            self.stdout.write(f"problem: {message}")
        self.stdout.write(f"slurm_sync: {outcome.summary() or 'nothing to do'}")
        if outcome.problems:
            raise CommandError(f"{len(outcome.problems)} problem(s)", returncode=1)
