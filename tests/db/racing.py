"""Run a function on several threads at once, or one in the background, each on its own database connection."""

import threading

from django.db import connection


def run_threads(count, target):
    """Run `target(i)` in `count` threads released together; return the errors they raised."""
    errors = []
    start = threading.Barrier(count)

    def body(i):
        try:
            start.wait()
            target(i)
        except Exception as err:  # kept for the test to assert on
            errors.append(err)
        finally:
            connection.close()

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    return errors


def lock_waiter(*fragments: str, timeout: float = 20.0) -> int:
    """Return the pid of another backend waiting on a lock in a statement holding one of `fragments`."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cur:
            cur.execute(
                """SELECT pid, query FROM pg_stat_activity
                    WHERE wait_event_type = 'Lock' AND datname = current_database()
                      AND pid <> pg_backend_pid()"""
            )
            for pid, query in cur.fetchall():
                if any(f in query for f in fragments):
                    return pid
        time.sleep(0.02)
    raise AssertionError(f"no backend waited on a lock in a statement with {fragments!r}")


class Background:
    """Run `target` in a thread on its own connection; errors are kept for the test to assert on."""

    def __init__(self, target, *args):
        self.errors: list[Exception] = []
        self.thread = threading.Thread(target=self._run, args=(target, *args))
        self.thread.start()

    def _run(self, target, *args):
        try:
            target(*args)
        except Exception as err:  # surfaced by join()
            self.errors.append(err)
        finally:
            connection.close()

    def join(self, timeout=30):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the background thread is stuck"
        assert self.errors == []
