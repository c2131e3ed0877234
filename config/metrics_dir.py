"""The directory every Berth process on a host shares its Prometheus counters in.

In `config`, the leaf every app may import: the metrics app folds and serves the directory, and
any app that counts (the Slurm bridge) must point prometheus-client at it before its first counter.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "PROMETHEUS_MULTIPROC_DIR"


def default_dir() -> Path:
    """Return `.metrics/` beside manage.py: shared by `make run`'s server and worker."""
    return Path(__file__).resolve().parent.parent / ".metrics"


def metrics_dir() -> Path:
    """Return the shared directory (created if missing), setting PROMETHEUS_MULTIPROC_DIR if unset.

    prometheus-client reads the variable when a process first writes a value, so it must be set
    before any counter is touched; children (the bench's forked placer, gunicorn workers) inherit it.
    """
    path = Path(os.environ.setdefault(ENV, str(default_dir())))
    path.mkdir(parents=True, exist_ok=True)
    return path
