"""Django's database cache, storing many keys in one statement.

Django's DatabaseCache stores a key in five statements (a count to decide on culling, a savepoint,
a read, a write, the release): a node page drawn again stored its six parts in thirty. Here
`set_many` is one PostgreSQL statement: it drops what has expired and what is past MAX_ENTRIES
(the soonest to expire first, as Django's cull drops the first keys), then inserts or replaces
every key given. Reads, deletes and single `set`s are Django's own.
"""

from __future__ import annotations

import base64
import pickle
from datetime import UTC, datetime

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.db import DatabaseCache as DjangoDatabaseCache
from django.db import connections, router
from django.utils import timezone

_SET_MANY_SQL = """
WITH expired AS (
  DELETE FROM {table} WHERE expires < %(now)s AND cache_key <> ALL(%(keys)s)
), surplus AS (
  DELETE FROM {table} WHERE cache_key IN (
    SELECT cache_key FROM {table} WHERE cache_key <> ALL(%(keys)s) AND expires >= %(now)s
     ORDER BY expires DESC, cache_key OFFSET %(room)s)
)
INSERT INTO {table} (cache_key, value, expires)
SELECT * FROM unnest(%(keys)s::text[], %(values)s::text[], %(expires)s::timestamptz[])
    ON CONFLICT (cache_key) DO UPDATE SET value = EXCLUDED.value, expires = EXCLUDED.expires
"""


class DatabaseCache(DjangoDatabaseCache):
    """The database cache (settings.CACHES) with `set_many` in one statement."""

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        """Store every key of `data` with one timeout, in one statement; return the keys not stored (none)."""
        if not data:
            return []
        seconds = self.get_backend_timeout(timeout)
        expires = (
            datetime.max.replace(tzinfo=UTC) if seconds is None else datetime.fromtimestamp(seconds, tz=UTC)
        )
        keys, values = [], []
        for key, value in data.items():
            keys.append(self.make_and_validate_key(key, version=version))
            values.append(base64.b64encode(pickle.dumps(value, self.pickle_protocol)).decode("latin1"))
        db = router.db_for_write(self.cache_model_class)
        table = connections[db].ops.quote_name(self._table)
        with connections[db].cursor() as cursor:
            cursor.execute(
                _SET_MANY_SQL.format(table=table),
                {
                    "now": timezone.now().replace(microsecond=0),
                    "keys": keys,
                    "values": values,
                    "expires": [expires.replace(microsecond=0)] * len(keys),
                    "room": max(0, self._max_entries - len(keys)),
                },
            )
        return []
