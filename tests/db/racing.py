"""Run a function on several threads at once, each on its own database connection."""

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
