"""Waits are capped: at most LONG_POLLS_PER_CREDENTIAL long-polls of one credential, and at most half
of a process's web threads, wait at once; past either the answer comes at once (never a 5xx), with
Retry-After. Every wait ends when the process stops.

lab: node-a and node-b, 4 GPUs each. Transactional: the watch reads on a connection of its own.
"""

import threading
import time

import pytest
from django.db import connection
from rest_framework.test import APIClient

from capacity.waits import SLOTS, WATCH
from config.stopping import STOPPING
from identity.tokens import issue_node_token

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def agent(lab):
    """Return a client for the node's own credential (one key per node), and its current ETag."""
    keys = {}

    def make(node="node-a"):
        if node not in keys:
            keys[node] = issue_node_token(node).key
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {keys[node]}")
        return client, client.get(f"/api/v1/nodes/{node}/assignments")["ETag"]

    yield make
    STOPPING.clear()
    WATCH.stop()


class Poll(threading.Thread):
    """One long-poll in the background: its status, Retry-After and how long it took."""

    def __init__(self, client, tag, node="node-a", wait=3):
        super().__init__()
        self.args = (client, tag, node, wait)
        self.start()

    def run(self):
        client, tag, node, wait = self.args
        t0 = time.monotonic()
        try:
            response = client.get(f"/api/v1/nodes/{node}/assignments?wait={wait}", HTTP_IF_NONE_MATCH=tag)
            self.status, self.retry_after = response.status_code, response.get("Retry-After")
        finally:
            self.took = time.monotonic() - t0
            connection.close()


def until_waiting(count, timeout=5.0):
    deadline = time.monotonic() + timeout
    while SLOTS.total() < count:
        assert time.monotonic() < deadline, SLOTS.total()
        time.sleep(0.02)


def test_a_third_long_poll_of_one_credential_answers_at_once_with_retry_after(agent):
    waiting = [Poll(*agent()) for _ in range(2)]
    until_waiting(2)
    third = Poll(*agent())
    third.join()
    assert (third.status, third.retry_after) == (304, "5")
    assert third.took < 1.0
    for poll in waiting:
        poll.join()
        assert (poll.status, poll.retry_after) == (304, None)
        assert poll.took >= 2.9  # they waited their whole 3 s


def test_another_credential_waits_beside_a_credential_at_its_bound(agent):
    waiting = [Poll(*agent()) for _ in range(2)]
    until_waiting(2)
    other = Poll(*agent("node-b"), node="node-b")
    for poll in [*waiting, other]:
        poll.join()
    assert (other.status, other.retry_after) == (304, None) and other.took >= 2.9


def test_waits_take_at_most_half_of_the_process_threads(agent, settings):
    settings.WEB_THREADS = 4  # two may wait
    waiting = [Poll(*agent("node-a")), Poll(*agent("node-b"), node="node-b")]
    until_waiting(2)
    past_share = Poll(*agent("node-b"), node="node-b")  # node-b's second: its own bound is 2
    past_share.join()
    assert (past_share.status, past_share.retry_after, past_share.took < 1.0) == (304, "5", True)
    for poll in waiting:
        poll.join()
        assert poll.retry_after is None and poll.took >= 2.9
    assert SLOTS.total() == 0


def test_a_refused_wait_still_answers_a_changed_feed_with_the_feed(agent):
    client, _tag = agent()
    waiting = [Poll(client, _tag) for _ in range(2)]
    until_waiting(2)
    response = client.get("/api/v1/nodes/node-a/assignments?wait=3", HTTP_IF_NONE_MATCH='"old"')
    assert response.status_code == 200 and response.json()["node"] == "node-a"
    for poll in waiting:
        poll.join()


def test_a_stopping_process_ends_every_wait_at_once_and_starts_none(agent):
    waiting = [Poll(*agent(), wait=60), Poll(*agent("node-b"), node="node-b", wait=60)]
    until_waiting(2)
    stopped_at = time.monotonic()
    STOPPING.set()
    for poll in waiting:
        poll.join(5)
        assert poll.status == 304
    assert time.monotonic() - stopped_at < 1.0
    late = Poll(*agent(), wait=60)
    late.join(5)
    assert late.status == 304 and late.took < 1.0


def test_a_create_past_the_process_share_answers_at_once_queued(agent, acme, ask, settings):
    settings.WEB_THREADS = 2  # one may wait: the agent's long-poll holds it
    settings.CAPACITY = {**settings.CAPACITY, "PLACER": "pool-lease"}
    poll = Poll(*agent())
    until_waiting(1)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {acme.auth_token.key}")
    t0 = time.monotonic()
    response = client.post("/api/v1/reservations", ask(1, wait={"timeoutMs": 5000}), format="json")
    assert time.monotonic() - t0 < 2.0  # no placer runs: a wait would last the whole 5 s
    assert (response.status_code, response.json()["status"]) == (201, "pending")
    poll.join()
