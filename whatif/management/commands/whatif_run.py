"""Run one what-if run the worker has claimed (run_placer starts this; not for people)."""

from django.core.management.base import BaseCommand, CommandError

from whatif.models import WhatIfRun
from whatif.runs import execute


class Command(BaseCommand):
    help = "Run the what-if run with this id, which must be running (claimed by run_placer), to its end."

    def add_arguments(self, parser):
        parser.add_argument("run", type=int)

    def handle(self, *args, run, **options):
        found = WhatIfRun.objects.filter(pk=run, status=WhatIfRun.Status.RUNNING).first()
        if found is None:
            raise CommandError(f"no running what-if run #{run}")
        self.stdout.write(execute(found))
