"""The capacity worker: place queued batches, release reservations whose window ended, retry pending ones."""

import signal
import threading

from django.core.management.base import BaseCommand, CommandError

from capacity import worker_jobs
from capacity.conf import placer_config
from capacity.worker import Round, run_round, serve
from config.checks import require_database


class Command(BaseCommand):
    help = (
        "Every --interval seconds: release ended reservations, then retry pending ones oldest first. "
        "With the pool-lease placer, also place queued reservations in batches as soon as they arrive. "
        "Several may run against one database (one placer per pool at a time). SIGTERM or Ctrl-C "
        "stops it; a batch cut short rolls back and its reservations stay queued for the next placer."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--interval", type=float, default=10.0, help="Seconds between housekeeping rounds (10)."
        )
        parser.add_argument("--once", action="store_true", help="Run one round and exit.")

    def handle(self, *args, interval, once, **options):
        try:
            # Later losses of the database are survived (serve); a URL that never answers is named.
            require_database()
        except RuntimeError as err:
            raise CommandError(str(err)) from None
        config = placer_config()
        if once:
            self._report(run_round(config), always=True)
            for job in worker_jobs.JOBS.values():
                said = job.run_once()
                if said:
                    self.stdout.write(f"{job.name}: {said}")
            return
        # SIGTERM (kill, a process manager, `make run` stopping) stops the worker as Ctrl-C does.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        self.stdout.write(f"run_placer: {config.placer} placer, housekeeping every {interval:g} s")
        stop = threading.Event()
        jobs = worker_jobs.start(stop)
        try:
            serve(config, interval=interval, report=self._report)
        except KeyboardInterrupt:
            # Everything the worker writes is transactional: what it was doing rolls back.
            self.stdout.write("run_placer: stopped")
        finally:
            stop.set()
            for thread in jobs:
                thread.join(timeout=10)

    def _report(self, done: Round, always: bool = False) -> None:
        if done.batch is not None and (len(done.batch) or always):
            self.stdout.write(f"batched {len(done.batch.placed)} placed, {len(done.batch.pending)} pending")
        if done.expired or done.retried or always:
            self.stdout.write(f"released {done.expired} ended, placed {done.retried} pending")
        if done.repaired:
            self.stdout.write(f"repaired {done.repaired} reservations on unusable atoms")
