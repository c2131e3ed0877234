"""gunicorn's settings for `make run` (and production): what the command line does not say.

gunicorn names itself in a `Server: gunicorn` header on every answer, which tells every client
(and scanner) what serves Berth; it has no setting to turn that off, so the name it sends is set
here, before it answers anything. Before it forks, the master checks DATABASE_URL's hosts
(config/checks.py) and stops with them named when none takes writes.

Stopping: on SIGTERM a worker finishes the requests it is answering, at most graceful_timeout
seconds. Long-polls and creates that wait for the placer would hold it for their whole wait (up to
60 s), so the worker's SIGTERM also sets config.stopping.STOPPING, and every wait answers at once.
"""

import os

import gunicorn.http.wsgi

from config.stopping import STOPPING

gunicorn.http.wsgi.SERVER = "Berth"

# Seconds a stopping worker may take over the requests it is answering (gunicorn's default is 30).
graceful_timeout = 3


def on_starting(server):
    """Tell Berth how many threads a worker has; stop, naming DATABASE_URL's hosts, when none takes writes."""
    # Before the settings are read: waits take at most half of a worker's threads (capacity/waits.py).
    os.environ["BERTH_WEB_THREADS"] = str(server.cfg.threads)
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from config.checks import require_database

    require_database()  # RuntimeError: gunicorn prints "Error: <message>" and exits 1


def post_fork(server, worker):
    """Have the worker's SIGTERM end the waits it is holding too (its handler is set after this)."""
    graceful = worker.handle_exit

    def handle_exit(sig, frame):
        STOPPING.set()
        graceful(sig, frame)

    worker.handle_exit = handle_exit


def worker_int(worker):
    """On Ctrl-C (SIGINT, SIGQUIT) a worker exits at once, but only after its threads: end their waits."""
    STOPPING.set()
