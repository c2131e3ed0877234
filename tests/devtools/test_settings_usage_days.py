"""Settings refuse to keep raw utilization minutes for less than a day (the idle check reads them)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_usage_raw_days_under_one_stops_the_start_with_the_setting_named():
    env = {
        **os.environ,
        "BERTH_USAGE_RAW_DAYS": "0",
        # A URL, so that reading settings starts no embedded database.
        "DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    ran = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; settings.USAGE_RAW_DAYS"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode != 0
    assert "BERTH_USAGE_RAW_DAYS=0: keep raw minutes 1 day at least." in ran.stderr
