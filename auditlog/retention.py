"""Keep sign-ins BERTH_AUDIT_DAYS: the worker deletes older ones every hour.

The other sources keep their own rows as long as their own rules say (node history and reservation
events are kept for good); sign-ins carry addresses, so they go once the audit no longer needs them.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from capacity.worker_jobs import survive
from identity.models import SignInEvent

log = logging.getLogger(__name__)
EVERY_SECONDS = 3600


def run_once() -> str:
    """Delete the sign-ins older than BERTH_AUDIT_DAYS; say how many ("" for none)."""
    deleted, _ = SignInEvent.objects.filter(
        at__lt=timezone.now() - timedelta(days=settings.AUDIT_DAYS)
    ).delete()
    return f"deleted {deleted} sign-ins older than {settings.AUDIT_DAYS} days" if deleted else ""


def serve(stop: threading.Event) -> None:
    """Prune every EVERY_SECONDS until `stop`."""

    def _serve(stop: threading.Event) -> None:
        while not stop.is_set():
            said = run_once()
            if said:
                log.info("audit-retention: %s", said)
            stop.wait(EVERY_SECONDS)

    survive("audit-retention", stop, _serve, log)
