"""Keep the audit's own rows BERTH_AUDIT_DAYS: the worker deletes older ones every hour.

The audit owns its trail (trail.AuditRecord: quotas, shares, policies, webhooks, feeds, tokens) and
the sign-ins (which carry addresses). The histories it reuses keep their rows as their own pages
need them: reservation events and node history are kept for good, never deleted here.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from capacity.port import survive
from identity.models import SignInEvent
from trail.models import AuditRecord

log = logging.getLogger(__name__)
EVERY_SECONDS = 3600


def run_once() -> str:
    """Delete the sign-ins and trail rows older than BERTH_AUDIT_DAYS; say how many ("" for none)."""
    before = timezone.now() - timedelta(days=settings.AUDIT_DAYS)
    # Nothing refers to either table: each is one DELETE.
    sign_ins, _ = SignInEvent.objects.filter(at__lt=before).delete()
    changes, _ = AuditRecord.objects.filter(at__lt=before).delete()
    if not (sign_ins or changes):
        return ""
    return f"deleted {sign_ins} sign-ins and {changes} changes older than {settings.AUDIT_DAYS} days"


def serve(stop: threading.Event) -> None:
    """Prune every EVERY_SECONDS until `stop`."""

    def _serve(stop: threading.Event) -> None:
        while not stop.is_set():
            said = run_once()
            if said:
                log.info("audit-retention: %s", said)
            stop.wait(EVERY_SECONDS)

    survive("audit-retention", stop, _serve, log)
