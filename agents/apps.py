from django.apps import AppConfig


class AgentsConfig(AppConfig):
    """The node agent's side of the API: its node report and its assignments feed (long-polled),
    read from capacity through capacity.port alone."""

    name = "agents"
    default_auto_field = "django.db.models.BigAutoField"
