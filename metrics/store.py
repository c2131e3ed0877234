"""The directory the processes share their counters in, and how it is read and kept small.

prometheus-client's multiprocess mode gives each process its own file (`counter_<pid>.db`, ...)
and a scrape sums them all. Files of processes that have exited stay, so the sums never go back
(a counter that drops reads as a reset to Prometheus); left alone they pile up with every restart
of a worker. So each process, when it starts, folds the files of dead processes into
`counter_archive.db` / `histogram_archive.db` and deletes them, under an exclusive lock that the
scrape takes shared: a scrape never sees a dead process's counts twice or not at all. The
directory is never wiped at start: the web server and the worker restart independently, and
wiping under a running process would lose its counts.

The directory is PROMETHEUS_MULTIPROC_DIR (a local directory every Berth process on the host
shares, such as a systemd RuntimeDirectory), else `.metrics/` in the project.
"""

from __future__ import annotations

import fcntl
import glob
import os
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from config.metrics_dir import ENV, default_dir, metrics_dir  # noqa: F401 (names of this module too)

LOCK_FILE = ".lock"
ARCHIVE = "archive"
# Only counters and histograms are written by Berth's processes; gauges come from the database.
FOLDED_TYPES = ("counter", "histogram")


@contextmanager
def locked(path: Path, exclusive: bool) -> Iterator[None]:
    """Hold the directory's lock: exclusive to fold files, shared to read them."""
    with open(path / LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def alive(pid: int) -> bool:
    """Return whether a process with this pid runs (on this host: the files are mmapped locally)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _pid_of(file: str) -> int | None:
    stem = os.path.basename(file)[: -len(".db")]
    pid = stem.rsplit("_", 1)[-1]
    return int(pid) if pid.isdigit() else None


def fold_dead(path: Path | None = None) -> int:
    """Fold the counter and histogram files of exited processes into the archive; return how many.

    Gauge files of dead processes (none written today) are deleted, as mark_process_dead does.
    """
    from prometheus_client.mmap_dict import MmapedDict

    path = path or metrics_dir()
    folded = 0
    with locked(path, exclusive=True):
        for typ in FOLDED_TYPES:
            dead = [
                f
                for f in glob.glob(str(path / f"{typ}_*.db"))
                if (pid := _pid_of(f)) is not None and pid != os.getpid() and not alive(pid)
            ]
            if not dead:
                continue
            totals: dict[str, float] = defaultdict(float)
            archive = MmapedDict(str(path / f"{typ}_{ARCHIVE}.db"))
            try:
                for key, value, _timestamp in archive.read_all_values():
                    totals[key] += value
                for f in dead:
                    for key, value, _timestamp, _pos in MmapedDict.read_all_values_from_file(f):
                        totals[key] += value
                for key, value in totals.items():
                    archive.write_value(key, value, 0.0)
            finally:
                archive.close()
            for f in dead:
                os.remove(f)
            folded += len(dead)
        for f in glob.glob(str(path / "gauge_*.db")):
            pid = _pid_of(f)
            if pid is not None and not alive(pid):
                os.remove(f)
    return folded


class SharedFilesCollector:
    """Sum every process's files (and the archive), read under the shared lock."""

    def __init__(self, path: Path):
        self.path = path

    def collect(self):
        from prometheus_client.multiprocess import MultiProcessCollector

        with locked(self.path, exclusive=False):
            files = glob.glob(str(self.path / "*.db"))
            return list(MultiProcessCollector.merge(files, accumulate=True))
