from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    """Events out: signed webhooks from an outbox, delivered by run_placer's worker."""

    name = "webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from capacity.port import Job, register

        from .deliver import run_once, serve

        register(Job("webhooks", run_once, serve))
