from django.apps import AppConfig

from config import replica
from inventory.signals import report_refused

from . import events


class MetricsConfig(AppConfig):
    """Prometheus metrics: counts what capacity tells its observers and answers /metrics."""

    name = "metrics"

    def ready(self):
        from capacity.port import register_observer

        for event, count in events.OBSERVERS.items():
            register_observer(event, count)
        replica.count_reads_with(events.replica_read)
        report_refused.connect(events.report_refused, dispatch_uid="metrics.report_refused")
