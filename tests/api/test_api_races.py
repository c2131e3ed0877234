"""One tenant racing itself over real HTTP: creates and releases from eight clients never answer 5xx.

The live server serves each request on its own thread and database connection, so these requests
meet in Postgres exactly as a busy tenant's would.
"""

import json
import threading
import time
import urllib.error
import urllib.request

import pytest
from django.db import connection

from capacity.audit import audit
from capacity.conf import placer_config
from capacity.models import Reservation
from capacity.placers.batch import place_queued

pytestmark = pytest.mark.django_db(transaction=True)

CLIENTS, ROUNDS = 8, 5


def call(base, token, method, path, body=None):
    """Send one API request; return (status, parsed body)."""
    request = urllib.request.Request(
        f"{base}/api/v1/{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def one_gpu(hours_from_now=1):
    start = int(time.time() * 1000) + hours_from_now * 3_600_000
    return {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": 1}],
        "during": {"start": start, "end": start + 3_600_000},
    }


@pytest.mark.parametrize("placer", ["inline", "pool-lease"])
def test_one_tenant_creating_and_releasing_over_http_from_eight_clients_never_answers_5xx(
    live_server, settings, acme, make_node, placer
):
    """
    node-0..node-3: 4 GPUs each. Eight clients of acme each create a 1-GPU reservation and release
    it, five times, at once; with pool-lease a worker places batches meanwhile.
    """
    settings.CAPACITY = {**settings.CAPACITY, "PLACER": placer}
    for i in range(4):
        make_node(f"node-{i}", gpus=4)
    token = acme.auth_token.key
    statuses: list[int] = []
    done = threading.Event()
    start = threading.Barrier(CLIENTS)

    def client():
        start.wait()
        for _ in range(ROUNDS):
            status, body = call(live_server.url, token, "POST", "reservations", one_gpu())
            statuses.append(status)
            if status == 201:
                status, _ = call(live_server.url, token, "POST", f"reservations/{body['id']}/release")
                statuses.append(status)

    def place_until_done():
        try:
            while not done.is_set():
                place_queued(placer_config())
        finally:
            connection.close()

    worker = threading.Thread(target=place_until_done)
    if placer == "pool-lease":
        worker.start()
    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        done.set()
        if worker.is_alive():
            worker.join(60)
    assert not any(t.is_alive() for t in threads)
    assert sorted(set(statuses)) == [200, 201], statuses
    assert statuses.count(201) == CLIENTS * ROUNDS
    assert Reservation.objects.filter(status="released").count() == CLIENTS * ROUNDS
    assert audit() == []


def test_one_series_sent_four_times_at_once_with_one_key_is_booked_once(live_server, acme, make_node):
    """node-0..node-3: 4 GPUs each. Four clients send the same weekly series with one key at once."""
    from capacity.models import Series

    for i in range(4):
        make_node(f"node-{i}", gpus=4)
    token = acme.auth_token.key
    body = {**one_gpu(24), "idempotencyKey": "term-1", "repeat": {"freq": "daily", "count": 5}}
    answers: list[tuple[int, int]] = []
    start = threading.Barrier(4)

    def client():
        start.wait()
        status, got = call(live_server.url, token, "POST", "reservations", body)
        answers.append((status, got["series"]["id"] if status in (200, 201) else got["code"]))

    threads = [threading.Thread(target=client) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    series = Series.objects.get()
    assert sorted(answers) == [(200, series.pk)] * 3 + [(201, series.pk)], answers
    assert Reservation.objects.filter(series=series).count() == 5 == Reservation.objects.count()
    assert audit() == []
