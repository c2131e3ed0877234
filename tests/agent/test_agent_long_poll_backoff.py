"""An agent whose long-poll Berth answered at once (its waits are full: Retry-After) asks again only
after the seconds Berth said, instead of in a loop."""

from __future__ import annotations

import threading
import time

from django.core.signals import request_started


def test_an_agent_refused_its_wait_asks_again_after_retry_after(node_agent, settings):
    settings.LONG_POLLS_PER_CREDENTIAL = 0  # every wait is refused: answered at once, Retry-After 5
    agent = node_agent("gpu-h100", "h100-8")
    assert agent.once().returncode == 0  # the node's GPUs exist: the feed stays as it is
    polls = []
    lock = threading.Lock()

    def count(sender, environ, **kwargs):
        if environ.get("PATH_INFO", "").endswith("/assignments"):
            with lock:
                polls.append(time.monotonic())

    request_started.connect(count)
    running = agent.start("--interval", "60", "--wait", "30", "--verbose")
    try:
        time.sleep(7)
    finally:
        err = agent.stop(running)
        request_started.disconnect(count)
    assert running.returncode == 0, err
    # The first read (no ETag yet: answered at once), the first long-poll (refused), the next one
    # 5 s later: not the hundreds an agent asking in a loop would send.
    assert len(polls) == 3, [round(t - polls[0], 2) for t in polls]
    assert polls[2] - polls[1] >= 4.5
