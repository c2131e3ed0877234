"""gunicorn's settings for `make run` (and production): what the command line does not say.

gunicorn names itself in a `Server: gunicorn` header on every answer, which tells every client
(and scanner) what serves Berth; it has no setting to turn that off, so the name it sends is set
here, before it answers anything. Before it forks, the master checks DATABASE_URL's hosts
(config/checks.py) and stops with them named when none takes writes.
"""

import os

import gunicorn.http.wsgi

gunicorn.http.wsgi.SERVER = "Berth"


def on_starting(server):
    """Stop at start, naming DATABASE_URL's hosts, when none of them takes writes."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from config.checks import require_database

    require_database()  # RuntimeError: gunicorn prints "Error: <message>" and exits 1
