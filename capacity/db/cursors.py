"""Cursors for the placer's hot statements: bound on the server and prepared once per connection.

Django's own cursors bind parameters on the client, so Postgres parses and plans every statement
afresh: about a millisecond for the commit's CTE. These cursors bind on the server; with
`prepare_threshold` 0 and `plan_cache_mode=force_generic_plan` (config/settings.py) each statement
is planned once per connection. They go through Django's cursor wrapper, so errors map to Django's
exceptions and query logging (and counting in tests and benchmarks) sees them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import psycopg
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections
from psycopg import pq

# psycopg keeps a statement's parsed form (where its %(name)s placeholders are) only for statements
# of at most 4,096 bytes (psycopg._queries.MAX_CACHED_STATEMENT_LENGTH); a longer one is split by a
# regular expression again on every execute (the commit's 5.8 KB statement: ~0.3 ms a placement).
_PLACEHOLDER = re.compile(r"%%|%\((\w+)\)s")


@dataclass(frozen=True)
class Numbered:
    """A statement written with %(name)s placeholders, sent with PostgreSQL's own $1, $2, ...

    Numbered once when the module loads; its cursor (`prepared_cursor(numbered=True)`) sends it as
    it is, so psycopg parses nothing however long it is. `args` orders a dict of values to match.
    """

    sql: str
    names: tuple[str, ...]

    @classmethod
    def of(cls, sql: str) -> Numbered:
        """Return `sql` numbered: the first name met is $1, a name met again keeps its number."""
        names: list[str] = []

        def number(match: re.Match) -> str:
            if match[1] is None:
                return "%"
            if match[1] not in names:
                names.append(match[1])
            return f"${names.index(match[1]) + 1}"

        return cls(_PLACEHOLDER.sub(number, sql), tuple(names))

    def args(self, values: Mapping[str, object]) -> list[object]:
        """Return the values in the statement's order (a missing name raises KeyError)."""
        return [values[name] for name in self.names]


def prepared_cursor(*, binary: bool = False, numbered: bool = False):
    """Return a Django cursor whose statements are bound on the server and prepared.

    `binary` asks for results in binary: large arrays of numbers come faster than as text (the
    ledger read of a full bench pool, 5,442 bookings and 4,128 claims: 12.9 → 11.2 ms).
    `numbered` takes statements with $1, $2, ... placeholders (a `Numbered`'s) and a list of values.
    """
    # `connection` is a proxy that finds this thread's connection at every attribute: once here
    # instead of five times (four cursors a placement, 3 µs each time).
    db = connections[DEFAULT_DB_ALIAS]
    db.ensure_connection()
    db.validate_thread_sharing()
    raw = (psycopg.RawCursor if numbered else psycopg.Cursor)(db.connection)
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
