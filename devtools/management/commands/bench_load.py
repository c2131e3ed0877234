"""Benchmark pages under load: signed-in readers and API writers at once, over loopback."""

import json

from django.core.management.base import BaseCommand, CommandError

from devtools.bench.load import MAX_CLIENTS, MAX_SECONDS, LoadError, run_load


class Command(BaseCommand):
    help = (
        "For --seconds, --readers signed-in operators read pool and node pages back to back while --writers "
        "API clients book one GPU and release it, against Berth under gunicorn as `make run` serves it (or "
        f"--url, on loopback). At most {MAX_CLIENTS} clients and {MAX_SECONDS} s. Prints p50, p95 and errors "
        "per kind, then a JSON summary line."
    )

    def add_arguments(self, parser):
        parser.add_argument("--readers", type=int, default=32)
        parser.add_argument("--writers", type=int, default=8)
        parser.add_argument("--seconds", type=float, default=30)
        parser.add_argument("--url", help="A Berth already serving on loopback, e.g. http://127.0.0.1:8000")
        parser.add_argument(
            "--people",
            type=int,
            default=1,
            help="How many operators the readers are (reader i signs in as the i mod PEOPLE-th; default 1)",
        )

    def handle(self, *args, readers, writers, seconds, url, people, **options):
        try:
            f = run_load(readers, writers, seconds, url, people)
        except LoadError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"{readers} readers ({people} operators) and {writers} writers for {f['seconds']} s"
        )
        self.stdout.write(
            f"{'kind':<8}{'answers':>9}{'per s':>9}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'errors':>8}"
        )
        for kind in ("reads", "writes"):
            r = f[kind]
            self.stdout.write(
                f"{kind:<8}{r['requests']:>9}{r['perSecond']:>9}{r['p50Ms']!s:>9}{r['p95Ms']!s:>9}"
                f"{r['maxMs']!s:>9}{r['errors']:>8}"
            )
            for why in r["why"]:
                self.stdout.write(f"  {why}")
        self.stdout.write(f"double-booked: {f['doubleBooked']}")
        self.stdout.write(json.dumps(f))
