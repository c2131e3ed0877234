"""Parameters sent as text literals read back in Postgres as the values they were made from."""

import json
from datetime import UTC, datetime

import pytest
from django.db import connection

from capacity.db import literals
from capacity.db.literals import window_range
from capacity.placement import Window

from booking import HOUR, MS

pytestmark = pytest.mark.django_db


def read_back(sql, *params):
    with connection.cursor() as cur:
        cur.execute(sql, list(params))
        return cur.fetchone()


def test_text_arrays_keep_commas_quotes_backslashes_braces_spaces_and_the_word_null():
    names = ["gpu", "memoryGiB", "b,c", 'd"e', "f\\g", "{h}", " i ", "NULL", "", "nvidia.com/gpu"]
    assert read_back("SELECT %s::text[]", literals.text_array(names)) == (names,)
    assert read_back("SELECT %s::text[]", literals.text_array([])) == ([],)


def test_json_texts_read_back_as_jsonb_arrays():
    docs = [{"vcpu": 16, "memoryGiB": 128}, {"quote": 'a"b\\c'}, {}]
    (back,) = read_back("SELECT %s::jsonb[]", literals.text_array(json.dumps(d) for d in docs))
    assert [json.loads(d) if isinstance(d, str) else d for d in back] == docs


def test_integer_and_time_arrays_and_a_millisecond_window():
    times = [datetime(2026, 12, 4, 3, 0, 0, 7000, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC)]
    window = Window(MS, MS + 36 * HOUR + 7)
    ints, stamps, same = read_back(
        "SELECT %s::bigint[], %s::timestamptz[], %s::tstzrange = %s::tstzrange",
        literals.int_array([1, 16, 2**40]),
        literals.time_array(times),
        literals.window_literal(window),
        window_range(window),
    )
    assert ints == [1, 16, 2**40] and stamps == times and same
