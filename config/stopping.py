"""Whether this process is shutting down: set by gunicorn's SIGTERM (config/gunicorn.conf.py).

Requests that wait (an agent's long-poll, a create's wait for the placer) look at it and answer at
once, so a graceful stop never waits out their timeouts.
"""

from __future__ import annotations

import threading

STOPPING = threading.Event()
