from django.apps import AppConfig


class DevtoolsConfig(AppConfig):
    """Demo data and benchmark commands; no models."""

    name = "devtools"
