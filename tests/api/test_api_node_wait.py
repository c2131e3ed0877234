"""An agent long-polls its node's assignments: answered at a change, else 304; no connection held.

lab: node-a and node-b, 4 GPUs each. Transactional: the watch reads on a connection of its own.
"""

import threading
import time

import pytest
from django.db import connection
from rest_framework.test import APIClient

from capacity import services
from capacity.waits import WATCH
from identity.tokens import issue_node_token

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def node_a(lab):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_node_token('node-a').key}")
    yield client
    WATCH.stop()


def connections_to_this_database() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return cur.fetchone()[0]


def test_with_nothing_changing_the_wait_ends_in_a_304(node_a):
    tag = node_a.get("/api/v1/nodes/node-a/assignments")["ETag"]
    t0 = time.monotonic()
    response = node_a.get("/api/v1/nodes/node-a/assignments?wait=1", HTTP_IF_NONE_MATCH=tag)
    assert response.status_code == 304 and response["ETag"] == tag
    assert 1.0 <= time.monotonic() - t0 < 3.0


def test_a_booking_on_the_node_answers_the_wait_at_once(node_a, ask, acme):
    tag = node_a.get("/api/v1/nodes/node-a/assignments")["ETag"]

    def book():
        time.sleep(1.0)
        services.reserve(ask(4))  # the fullest node that fits, ties on name: node-a
        connection.close()

    booker = threading.Thread(target=book)
    booker.start()
    t0 = time.monotonic()
    response = node_a.get("/api/v1/nodes/node-a/assignments?wait=20", HTTP_IF_NONE_MATCH=tag)
    waited = time.monotonic() - t0
    booker.join()
    assert response.status_code == 200 and response["ETag"] != tag
    assert sum(1 for d in response.json()["devices"] if d["now"]) == 4
    assert 1.0 <= waited < 4.0  # the booking at 1 s, seen within a poll or two


def test_waiting_agents_hold_no_database_connection(lab):
    """Eight agents waiting at once add the watch's one connection, not eight."""
    tokens = {n: issue_node_token(n).key for n in ("node-a", "node-b")}
    clients, tags = [], []
    for name in ("node-a", "node-b") * 4:  # two nodes, four agents each, all with the current tag
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {tokens[name]}")
        clients.append((name, client))
        tags.append(client.get(f"/api/v1/nodes/{name}/assignments")["ETag"])
    connection.close()
    before = connections_to_this_database() - 1  # this test's own, opened to count
    answers = []

    def agent(i):
        name, client = clients[i]
        answers.append(
            client.get(f"/api/v1/nodes/{name}/assignments?wait=3", HTTP_IF_NONE_MATCH=tags[i]).status_code
        )
        connection.close()

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    time.sleep(1.5)
    during = connections_to_this_database() - 1
    for t in threads:
        t.join()
    WATCH.stop()
    assert answers == [304] * 8
    assert during - before <= 2, (before, during)


def test_a_booking_marked_idle_answers_the_wait_with_its_idle_flag(node_a, ask, acme):
    from django.utils import timezone

    from capacity.models import Reservation

    held = services.reserve(ask(4)).reservation  # node-a, as above
    connection.close()
    tag = node_a.get("/api/v1/nodes/node-a/assignments")["ETag"]

    def mark():
        time.sleep(1.0)
        idle = {
            "type": "Idle",
            "status": "True",
            "reason": "LowUtilization",
            "message": "m",
            "since": timezone.now().isoformat(),
        }
        Reservation.objects.filter(pk=held.pk).update(conditions=[idle])
        connection.close()

    marker = threading.Thread(target=mark)
    marker.start()
    t0 = time.monotonic()
    response = node_a.get("/api/v1/nodes/node-a/assignments?wait=20", HTTP_IF_NONE_MATCH=tag)
    waited = time.monotonic() - t0
    marker.join()
    assert response.status_code == 200 and response["ETag"] != tag
    assert {d["now"]["idle"]["message"] for d in response.json()["devices"] if d["now"]} == {"m"}
    assert 1.0 <= waited < 4.0  # the Idle condition wakes the watch as a booking does
