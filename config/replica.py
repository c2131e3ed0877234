"""Reads from a replica (DATABASE_REPLICA_URL) for the pages and GET endpoints that only read.

Which reads: those decorated with `replica_reads` — the pool list and pages, node pages and their
history, usage, and the API's pools, nodes, node history and usage. Nothing else: reservations
(lists and pages), quota, previews, earliest start, every write and every locking read use the
primary. Inside a decorated view the thread's "default" connection *is* the replica's, so the
ORM and the raw SQL of the services read it alike; the view never writes (a replica refuses).

When the replica is not used:
- the request is not GET or HEAD;
- the client wrote something in the last REPLICA_PIN_SECONDS (a `berth_primary` cookie that every
  successful write sets): what a user has just changed is read back from the primary. Session and
  user are resolved before the view, on the primary, so a fresh sign-in is never lost;
- the replica lags more than REPLICA_MAX_LAG_SECONDS behind what it has received, or its WAL
  receiver is not streaming, or it does not answer (checked at most once a second per process;
  a replica that did not answer is not asked again for REPLICA_RETRY_SECONDS). A read whose
  replica connection fails midway runs again on the primary: it only reads.
Each decorated read is counted by outcome (replica, pinned, lag or down) through the counter an
app registers (`count_reads_with`; the metrics app's `berth_replica_reads{outcome}`): config imports no app.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from functools import wraps

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, Error, InterfaceError, OperationalError, connections

REPLICA = "replica"
PIN_COOKIE = "berth_primary"
SAFE = ("GET", "HEAD")
CHECK_EVERY = 1.0
log = logging.getLogger("berth.database")
_counter: list[Callable[[str], None]] = []  # the registered counter, once there is one


def count_reads_with(count: Callable[[str], None]) -> None:
    """Call `count(outcome)` for every decorated read (in place of any counter registered before)."""
    _counter[:] = [count]


def _count(outcome: str) -> None:
    for count in _counter:
        count(outcome)


# How far the replica's replayed WAL trails what it has received (0 once caught up: a quiet
# primary must not read as lag), and whether it is streaming at all. On a primary (a replica URL
# that names the promoted server after a failover) both are trivially fine.
_LAG_SQL = """
SELECT NOT pg_is_in_recovery()
       OR EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE status = 'streaming'),
       CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp()), 0)
       END
"""


class _Health:
    """The replica's last known state in this process: usable, or why not."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.checked = float("-inf")
        self.retry_at = float("-inf")
        self.outcome = "down"  # until the first answer: not known to be up
        self.lag = 0.0

    def outcome_now(self) -> str:
        """Return `replica`, `lag` or `down`, asking the replica when the last answer is old."""
        now = time.monotonic()
        if now - self.checked < CHECK_EVERY or now < self.retry_at:
            return self.outcome
        # One thread asks; the others go on with the last answer rather than queue behind it.
        if not self.lock.acquire(blocking=False):
            return self.outcome
        try:
            self.checked = now
            return self._ask(now)
        finally:
            self.lock.release()

    def lost(self, err: Exception, now: float | None = None) -> None:
        """Mark the replica down for REPLICA_RETRY_SECONDS and drop its connection."""
        log.warning("the replica does not answer (%s); reading from the primary", err)
        _close(REPLICA)
        now = time.monotonic() if now is None else now
        self.outcome, self.checked, self.retry_at = "down", now, now + settings.REPLICA_RETRY_SECONDS

    def _ask(self, now: float) -> str:
        try:
            with connections[REPLICA].cursor() as cur:
                cur.execute(_LAG_SQL)
                streaming, lag = cur.fetchone()
        except Error as err:
            self.lost(err, now)
            return self.outcome
        self.lag = float(lag)
        if not streaming:
            self.outcome = "down"
        elif self.lag > settings.REPLICA_MAX_LAG_SECONDS:
            self.outcome = "lag"
        else:
            self.outcome = "replica"
        return self.outcome


HEALTH = _Health()


def configured() -> bool:
    """Return whether a replica is configured."""
    return REPLICA in settings.DATABASES


def _close(alias: str) -> None:
    try:
        connections[alias].close()
    except Error:
        connections[alias].connection = None


def pinned(request) -> bool:
    """Return whether the client wrote recently enough to read its own change from the primary."""
    try:
        return float(request.COOKIES.get(PIN_COOKIE, "0")) > time.time()
    except ValueError:
        return False


def pin(request, response) -> None:
    """Send the client to the primary for its next reads after a successful write."""
    if configured() and request.method not in SAFE and response.status_code < 400:
        until = time.time() + settings.REPLICA_PIN_SECONDS
        response.set_cookie(
            PIN_COOKIE,
            f"{until:.0f}",
            max_age=settings.REPLICA_PIN_SECONDS,
            httponly=True,
            samesite="Lax",
            secure=settings.SESSION_COOKIE_SECURE,
        )


def choose(request) -> str:
    """Return where this read goes: `replica`, or why the primary (pinned, lag, down, none)."""
    if not configured() or request.method not in SAFE:
        return "none"
    if pinned(request):
        return "pinned"
    return HEALTH.outcome_now()


@contextmanager
def _as_default(alias: str):
    """Make the thread's default connection the alias's for the block, then put it back."""
    # Django keeps one connection object per alias per thread: inside the block `connection` and
    # `connections["default"]` are the replica's, for the ORM and raw SQL alike.
    local = connections._connections
    primary = getattr(local, DEFAULT_DB_ALIAS, None)
    setattr(local, DEFAULT_DB_ALIAS, connections[alias])
    try:
        yield
    finally:
        if primary is None:
            delattr(local, DEFAULT_DB_ALIAS)
        else:
            setattr(local, DEFAULT_DB_ALIAS, primary)


def read(request, call: Callable):
    """Return `call()`, run on the replica when it should be, else (or if the replica fails) on the primary."""
    outcome = choose(request)
    if outcome == "none":
        return call()
    if outcome == "replica":
        try:
            with _as_default(REPLICA):
                answer = call()
        except (OperationalError, InterfaceError) as err:
            # It went away since it was last asked (at most a second ago). The call only reads,
            # so it runs again on the primary; the replica is not asked again for a while.
            HEALTH.lost(err)
            outcome = "down"
        else:
            _count(outcome)
            return answer
    _count(outcome)
    return call()


def replica_reads(view: Callable) -> Callable:
    """Let a view (or an API view's `get`) that only reads run on the replica.

    Put it innermost, under `login_required`: the user is resolved on the primary first.
    """

    @wraps(view)
    def wrapped(*args, **kwargs):
        request = args[0] if not hasattr(args[0], "request") else args[0].request
        return read(request, lambda: view(*args, **kwargs))

    return wrapped


class PinAfterWrite:
    """Middleware: a successful write sends its client's next reads to the primary for a while."""

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        pin(request, response)
        return response
