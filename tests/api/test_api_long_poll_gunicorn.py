"""Under gunicorn as `make run` serves (DEBUG off, threads): an agent's long-polls leave threads to
people, and a stop ends every wait at once, so the server is gone within seconds.

One worker with 4 threads: at most 2 wait (half), 2 per credential. lab: node-a and node-b.
"""

import os
import secrets
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from identity.tokens import issue_node_token

from databases import this_database_url

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(lab):
    """Start gunicorn (1 worker × 4 threads) on the test database; yield its URL and process."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "BERTH_"))}
    env |= {
        "DATABASE_URL": this_database_url("berth-long-poll-test"),
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_DEBUG": "0",
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    process = subprocess.Popen(
        [ROOT / ".venv/bin/gunicorn", "config.wsgi", "--config", "config/gunicorn.conf.py", "--bind",
         f"127.0.0.1:{port}", "--workers", "1", "--threads", "4", "--no-control-socket"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert process.poll() is None, process.stderr.read().decode()
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        process.stderr.close()


def fetch(url, key, **headers):
    request = urllib.request.Request(url, headers={"Authorization": f"Token {key}", **headers})
    try:
        with urllib.request.urlopen(request, timeout=90) as answer:
            return answer.status, answer.headers
    except urllib.error.HTTPError as error:
        return error.code, error.headers


def test_long_polls_leave_threads_to_people_and_a_stop_ends_them_at_once(server, operator):
    url, process = server
    key = issue_node_token("node-a").key
    feed = f"{url}/api/v1/nodes/node-a/assignments"
    _, headers = fetch(feed, key)
    tag = headers["ETag"]
    answers = []

    def poll():
        status, headers = fetch(f"{feed}?wait=60", key, **{"If-None-Match": tag})
        answers.append((status, headers.get("Retry-After"), time.monotonic()))

    polls = [threading.Thread(target=poll) for _ in range(6)]
    for t in polls:
        t.start()
    time.sleep(1.5)
    # Four of the six answered at once; two wait, and two threads are left for people.
    assert sorted((s, r) for s, r, _ in answers) == [(304, "5")] * 4
    t0 = time.monotonic()
    status, _ = fetch(f"{url}/api/v1/pools", operator.auth_token.key)
    assert status == 200 and time.monotonic() - t0 < 2.0

    stopped_at = time.monotonic()
    process.send_signal(signal.SIGTERM)  # as `make run`'s trap stops it
    process.wait(10)
    gone = time.monotonic() - stopped_at
    for t in polls:
        t.join(5)
    assert gone < 5.0, gone
    assert [(s, r) for s, r, _ in answers[4:]] == [(304, None)] * 2
    assert all(at - stopped_at < 1.5 for _, _, at in answers[4:])
