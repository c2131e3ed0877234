"""Cursors for the placer's hot statements: bound on the server and prepared once per connection.

Django's own cursors bind parameters on the client, so Postgres parses and plans every statement
afresh: about a millisecond for the commit's CTE. These cursors bind on the server; with
`prepare_threshold` 0 and `plan_cache_mode=force_generic_plan` (config/settings.py) each statement
is planned once per connection. They go through Django's cursor wrapper, so errors map to Django's
exceptions and query logging (and counting in tests and benchmarks) sees them.
"""

from __future__ import annotations

import hashlib
import re

import psycopg
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections
from psycopg import pq

# A service's %(name)s parameter, or a %% escape. (A function's call stays short: psycopg parses a
# statement's placeholders again at every execute past 4,096 bytes, as the commit's 5.8 KB were.)
_PLACEHOLDER = re.compile(r"%%|%\((\w+)\)s")


def prepared_cursor(*, binary: bool = False):
    """Return a Django cursor whose statements are bound on the server and prepared.

    `binary` asks for results in binary: large arrays of numbers come faster than as text (the
    ledger read of a full bench pool, 5,442 bookings and 4,128 claims: 12.9 → 11.2 ms).
    """
    # `connection` is a proxy that finds this thread's connection at every attribute: once here
    # instead of five times (four cursors a placement, 3 µs each time).
    db = connections[DEFAULT_DB_ALIAS]
    db.ensure_connection()
    db.validate_thread_sharing()
    raw = psycopg.Cursor(db.connection)
    if binary:
        raw.format = pq.Format.BINARY
    if db.queries_logged:
        return db.make_debug_cursor(raw)
    return db.make_cursor(raw)


class Listener:
    """LISTEN on a channel on Django's connection and wait for its notifications.

    psycopg (3.3) keeps the notifications that arrive while the connection runs other statements
    and hands them to the next wait, so none is lost between two waits.
    """

    def __init__(self, *channels: str):
        self.channels = channels

    def __enter__(self) -> Listener:
        with connection.cursor() as cur:
            for channel in self.channels:
                cur.execute(f"LISTEN {channel}")
        return self

    def __exit__(self, kind, *exc) -> None:
        if connection.connection is None or connection.connection.closed:
            return
        try:
            with connection.cursor() as cur:
                for channel in self.channels:
                    cur.execute(f"UNLISTEN {channel}")
        except DatabaseError:
            if kind is None:
                raise  # else the error that ended the block is the one to report

    def wait(self, timeout: float) -> str | None:
        """Wait up to `timeout` seconds for a notification on the channels; return its channel, or None."""
        # Through Django's error wrapper: a lost connection raises Django's OperationalError here too.
        with connection.wrap_database_errors:
            for note in connection.connection.notifies(timeout=max(timeout, 0.0)):
                if note.channel in self.channels:
                    return note.channel
        return None


def as_body(sql: str) -> str:
    """Return `sql` with its %(name)s parameters as the function's a_name arguments."""
    return _PLACEHOLDER.sub(lambda m: "%" if m[1] is None else f"a_{m[1]}", sql)


class ServerFunction:
    """A service's SQL as a VOLATILE PL/pgSQL function, named by its text's digest (a process never
    calls one made from other code), made by `migrate` and by a process that finds it missing.

    Each statement of such a function takes a fresh snapshot: one call can take a lock, then read
    what the transaction it waited for committed (one Bind/Execute, not a pipeline and a Sync).
    """

    def __init__(self, prefix: str, arguments: str, result: str, body: str, *sql: str):
        """Make `body` a function of `arguments` ("name type, ..."), checked against `sql`'s parameters."""
        pairs = [a.split(None, 1) for a in arguments.split(",")]  # [name, type], a type may hold spaces
        declared = {name for name, _ in pairs}
        used = set(_PLACEHOLDER.findall("".join(sql))) - {""}
        if not used <= declared:
            raise ValueError(f"the SQL uses undeclared parameters: {sorted(used - declared)}")
        # Arguments are prefixed so that none is taken for a column of the same name.
        declaration = ", ".join(f"a_{name} {kind}" for name, kind in pairs)
        digest = hashlib.sha256(f"{declaration}|{result}|{body}".encode()).hexdigest()[:12]
        self.name = f"{prefix}_{digest}"
        self.signature = f"{self.name}({', '.join(kind for _, kind in pairs)})"
        self.create_sql = (
            f"CREATE OR REPLACE FUNCTION {self.name}({declaration}) RETURNS TABLE ({result})"
            f" LANGUAGE plpgsql VOLATILE AS $berth$\n{body}\n$berth$"
        )
        placeholders = ", ".join(f"%({name})s::{kind}" for name, kind in pairs)
        self.call_sql = f"SELECT * FROM {self.name}({placeholders})"
        self._known = False

    def ensure(self) -> None:
        """Create the function when this database lacks it (checked once per process)."""
        if self._known:
            return
        with connection.cursor() as cur:
            cur.execute("SELECT to_regprocedure(%s) IS NOT NULL", [self.signature])
            if cur.fetchone()[0]:
                self._known = True
                return
            cur.execute(self.create_sql)
        # Made inside a caller's transaction, the function is there only once that commits.
        self._known = not connection.in_atomic_block
