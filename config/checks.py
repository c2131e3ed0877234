"""Check at start that DATABASE_URL's hosts answer and one of them takes writes.

Run by `migrate` (a database-tagged system check, so `make run` stops before serving), by
`run_placer` and by gunicorn's master before it forks: a URL with a host that does not answer is
named at start, not found out by the first request.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.checks import Error, Tags, Warning, register

from config import database_url

log = logging.getLogger("berth.database")


def problems(alias: str = "default") -> tuple[str, bool]:
    """Return (what is wrong with the alias's hosts, whether Berth cannot run at all)."""
    states = database_url.probe(settings.DATABASES[alias])
    return database_url.describe(states), not any(s.role == "primary" for s in states)


def require_database() -> None:
    """Raise RuntimeError when no host takes writes; log the hosts that do not answer."""
    message, fatal = problems()
    if fatal:
        raise RuntimeError(message)
    if message:
        log.warning("%s; carrying on with the hosts that answer", message)


@register(Tags.database)
def database_hosts(app_configs=None, databases=None, **kwargs):
    """Name each host of DATABASE_URL that does not answer (an error when none takes writes)."""
    if not databases or "default" not in databases:
        return []
    message, fatal = problems()
    found = (
        [Error(message, id="berth.E001") if fatal else Warning(message, id="berth.W001")] if message else []
    )
    if "replica" in settings.DATABASES:
        down = [s for s in database_url.probe(settings.DATABASES["replica"]) if s.role == "down"]
        if down:
            named = "; ".join(f"{s.name} does not answer ({s.reason})" for s in down)
            found.append(Warning(f"DATABASE_REPLICA_URL: {named}; reads go to the primary", id="berth.W002"))
    return found
