"""Logging: every error reaches stderr with its traceback and the request it broke.

Django configures no handler of its own for errors when DEBUG is off (it only mails ADMINS), so a
500 was logged nowhere. LOGGING (config/settings.py) sends warnings and errors to stderr, where
gunicorn and systemd's journal keep them, through RequestFields, which names the request each
record came from (its id as X-Request-Id answered it, method and path); with ADMINS and a mail
server set, errors are mailed to them too.
"""

from __future__ import annotations

import logging

FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s %(method)s %(path)s] %(message)s"


class RequestFields(logging.Filter):
    """Add request_id, method and path to a record ("-" where it came from no request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        # Django's own records carry the request; a socket-level one (django.server) carries a socket.
        if not hasattr(request, "method"):
            request = None
        record.request_id = getattr(request, "request_id", None) or "-"
        record.method = getattr(request, "method", None) or "-"
        record.path = getattr(request, "path", None) or "-"
        return True


def logging_config(mail_admins: bool) -> dict:
    """Return LOGGING: stderr for warnings and errors of every logger; errors mailed when asked."""
    handlers = ["stderr", "mail_admins"] if mail_admins else ["stderr"]
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_fields": {"()": RequestFields}},
        "formatters": {"berth": {"format": FORMAT}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "level": "WARNING",
                "filters": ["request_fields"],
                "formatter": "berth",
            },
            "mail_admins": {"class": "django.utils.log.AdminEmailHandler", "level": "ERROR"},
        },
        "root": {"handlers": handlers, "level": "WARNING"},
        # Django's defaults print to the console with DEBUG on and mail otherwise; the root's
        # handlers do both now, so its own go (or every line would be printed twice).
        # django.server (runserver's access lines) keeps its own.
        "loggers": {"django": {"handlers": [], "level": "INFO", "propagate": True}},
    }
