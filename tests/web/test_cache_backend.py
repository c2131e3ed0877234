"""Berth's database cache: many keys in one statement, replaced, expired ones and the surplus dropped."""

import time

import pytest
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config.cache import DatabaseCache


@pytest.fixture
def small_cache(settings, db):
    settings.CACHES = {
        **settings.CACHES,
        "small": {
            "BACKEND": "config.cache.DatabaseCache",
            "LOCATION": "berth_cache",
            "OPTIONS": {"MAX_ENTRIES": 5},
        },
    }
    cache = caches["small"]
    cache.key_prefix = f"small-{time.time_ns()}"  # never clear(): the table is the default cache's too
    assert isinstance(cache, DatabaseCache)
    return cache


def rows(prefix: str) -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM berth_cache WHERE cache_key LIKE %s", [f"{prefix}%"])
        return cur.fetchone()[0]


def test_many_keys_are_stored_in_one_statement_and_read_back(small_cache):
    with CaptureQueriesContext(connection) as captured:
        assert small_cache.set_many({"a": ("html-a", 1), "b": {"x": [1, 2]}}, timeout=30) == []
    assert len(captured) == 1
    assert small_cache.get_many(["a", "b", "c"]) == {"a": ("html-a", 1), "b": {"x": [1, 2]}}
    small_cache.set_many({"a": "again"}, timeout=30)
    assert small_cache.get("a") == "again"


def test_expired_keys_go_and_the_table_keeps_at_most_max_entries(small_cache):
    with connection.cursor() as cur:  # a row already past its time, as a stopped writer leaves them
        cur.execute(
            "INSERT INTO berth_cache VALUES (%s, 'x', now() - interval '1 minute')",
            [f"{small_cache.key_prefix}:1:old"],
        )
    small_cache.set_many({f"k{i}": i for i in range(4)}, timeout=30)
    assert small_cache.get("old") is None and rows(small_cache.key_prefix) == 4
    small_cache.set_many({f"n{i}": i for i in range(3)}, timeout=60)
    # Five at most in the whole table: the soonest to expire went first, what was just stored stays.
    assert rows("") == 5
    assert small_cache.get_many(["n0", "n1", "n2"]) == {"n0": 0, "n1": 1, "n2": 2}


def test_a_timeout_of_none_keeps_the_key(small_cache):
    small_cache.set_many({"forever": 1}, timeout=None)
    assert small_cache.get("forever") == 1


def test_past_max_entries_the_soonest_to_expire_go_and_the_longer_kept_stay(small_cache):
    small_cache.set_many({"long": 1}, timeout=600)
    small_cache.set_many({"short": 2}, timeout=5)
    small_cache.set_many({f"n{i}": i for i in range(4)}, timeout=30)
    assert rows("") == 5
    assert small_cache.get("long") == 1 and small_cache.get("short") is None
