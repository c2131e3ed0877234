"""Benchmark another tenant's reads while one tenant's creates wait on a slow outside check."""

import json

from django.core.management.base import BaseCommand, CommandError

from devtools.bench.outside_check import MAX_CREATES, MAX_SECONDS, run_outside_check


class Command(BaseCommand):
    help = (
        "Against Berth under gunicorn as `make run` serves it: for each N of --creates, N clients of one "
        "tenant create bookings in a pool whose outside check answers after --delay seconds, while "
        "--readers clients of another tenant read pages and the API of another pool for --seconds. "
        f"At most {MAX_CREATES} creates and {MAX_SECONDS} s a phase. Prints the readers' p50, p95 and "
        "errors per N, the creates' answers, then a JSON summary line."
    )

    def add_arguments(self, parser):
        parser.add_argument("--creates", default="0,16,32,48", help="comma-separated N, e.g. 0,16,32,48")
        parser.add_argument("--readers", type=int, default=2)
        parser.add_argument("--seconds", type=float, default=15)
        parser.add_argument("--delay", type=float, default=1.9)

    def handle(self, *args, creates, readers, seconds, delay, **options):
        try:
            f = run_outside_check([int(n) for n in creates.split(",")], readers, seconds, delay)
        except ValueError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"check answers after {delay} s; {readers} readers for {seconds} s a phase")
        self.stdout.write(
            f"{'creates':>8}{'reads':>7}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}{'errors':>8}  creates answered"
        )
        for n, r in f["phases"].items():
            c = r["creates"]
            self.stdout.write(
                f"{n:>8}{r['requests']:>7}{r['p50Ms']!s:>9}{r['p95Ms']!s:>9}{r['maxMs']!s:>9}{r['errors']:>8}"
                f"  {c['answers']} booked {c['booked']}, slowest refusal {c['slowestRefusalMs']} ms"
            )
            for why in r["why"] + c["why"]:
                self.stdout.write(f"  {why}")
        self.stdout.write(f"keys booked twice: {f['keysBookedTwice']}; double-booked: {f['doubleBooked']}")
        self.stdout.write(json.dumps(f))
