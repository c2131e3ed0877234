from django.apps import AppConfig


class WhatifConfig(AppConfig):
    """What if: replay demand on a changed copy of a pool with the real planner; runs kept to compare."""

    name = "whatif"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from capacity.port import Job, register

        from .runs import run_once, serve

        register(Job("whatif", run_once, serve))
