"""The test database as a URL, for the processes a test starts (a worker, gunicorn)."""

from urllib.parse import quote, urlencode

from django.db import connection


def this_database_url(application_name: str) -> str:
    """Return a URL for the database this test runs on, as config/settings.py reads DATABASE_URL."""
    db = connection.settings_dict
    auth = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        auth += ":" + quote(db["PASSWORD"], safe="")
    host = f"{db['HOST'] or ''}" + (f":{db['PORT']}" if db["PORT"] else "")
    # The settings add prepare_threshold and plan_cache_mode themselves; the rest (the embedded
    # server's socket directory, sslmode, ...) travel as query parameters.
    options = {k: v for k, v in db["OPTIONS"].items() if k not in ("prepare_threshold", "options")}
    query = urlencode({**options, "application_name": application_name})
    return f"postgresql://{auth}@{host}/{quote(db['NAME'], safe='')}?{query}"
