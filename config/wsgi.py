"""WSGI entry point: the application, warmed before it answers (config/warmup.py)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

if os.environ.get("BERTH_WARMUP", "1") != "0":
    from config.warmup import warm

    warm()
