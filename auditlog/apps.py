from django.apps import AppConfig


class AuditlogConfig(AppConfig):
    """The audit export: reads every app's records; its one job keeps sign-ins BERTH_AUDIT_DAYS."""

    name = "auditlog"

    def ready(self):
        from capacity.port import Job, register

        from .retention import run_once, serve

        register(Job("audit-retention", run_once, serve))
