"""Metrics across processes: what `run_placer` places in its own process is read by the web's /metrics."""

import dataclasses
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from capacity import services
from capacity.conf import placer_config
from metrics.store import fold_dead

from databases import this_database_url

pytestmark = pytest.mark.django_db(transaction=True)


def placements(client, placer, outcome) -> float:
    response = client.get("/metrics")
    assert response.status_code == 200
    return sum(
        s.value
        for family in text_string_to_metric_families(response.content.decode())
        for s in family.samples
        if s.name == "berth_placements_total" and s.labels == {"placer": placer, "outcome": outcome}
    )


def test_batches_placed_by_the_worker_process_are_counted_in_the_web_processes_scrape(tenant, make_node):
    make_node("node-a", gpus=4)
    web = Client()
    web.force_login(User.objects.create_user("ops", is_staff=True))
    before = placements(web, "pool-lease", "placed")
    config = dataclasses.replace(placer_config(), placer="pool-lease")
    ask = {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": 1}],
        "duration": "1h",
    }
    for _ in range(3):
        assert services.is_queued(services.reserve(ask, config=config).reservation)
    worker = subprocess.run(
        [sys.executable, "manage.py", "run_placer", "--once"],
        cwd=settings.BASE_DIR,
        env={**os.environ, "DATABASE_URL": this_database_url("metrics-worker"), "BERTH_PLACER": "pool-lease"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert worker.returncode == 0, worker.stderr
    assert "batched 3 placed, 0 pending" in worker.stdout
    assert placements(web, "pool-lease", "placed") - before == 3
    # The worker has exited: folding its file into the archive keeps its counts.
    assert fold_dead() >= 1
    assert placements(web, "pool-lease", "placed") - before == 3
