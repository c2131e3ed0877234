"""Whatever a device's attributes hold in the database, preview, earliest start and booking answer.

Attributes may predate the typed check (inventory/attributes.py) or come from an operator through
the admin, so the planner may meet any JSON: objects, lists, null, huge numbers. The values here are
written with SQL, past every check, and every answer must be below 500 with the books clean.
"""

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from capacity.audit import audit
from inventory.attributes import ATTRIBUTES

KEYS = [*ATTRIBUTES, "rack"]  # every typed key, and one a node may add
# Digits Python's int() refuses past 4,300; jsonb holds them, so the loader meets them as text.
HUGE = "__huge_number__"

TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=300)
LEAF = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | TEXT
BY_TYPE = {
    "null": st.none(),
    "boolean": st.booleans(),
    "integer": st.integers(min_value=-(10**20), max_value=10**20),
    "big integer": st.sampled_from([2**53, 2**63, -(2**63) - 1, 10**308, 10**400, 10**4000]),
    "huge integer": st.sampled_from([4301, 5000, 20000]).map(lambda digits: (HUGE, digits)),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "string": TEXT | st.sampled_from(["24", "80.0", "1e400", "true", "H100", " ", "=HYPERLINK(1)"]),
    "list": st.lists(LEAF, max_size=4),
    "object": st.dictionaries(TEXT, LEAF, max_size=4),
}
TYPED = st.sampled_from(sorted(BY_TYPE)).flatmap(lambda kind: BY_TYPE[kind].map(lambda value: (kind, value)))


def as_json(key: str, value: object) -> str:
    if isinstance(value, tuple) and value[0] == HUGE:
        return json.dumps({key: 0}).replace("0}", "9" * value[1] + "}")
    return json.dumps({key: value})


def store(node: str, key: str, value: object) -> None:
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE inventory_device SET attributes = %s::jsonb"
            " WHERE node_id = (SELECT id FROM inventory_node WHERE name = %s)",
            [as_json(key, value), node],
        )


def selectors(key: str) -> list[str | None]:
    return [None, f"{key} >= 24", f"{key} in (24, H100, true)", key, f"{key} notin (x)", f"{key} < 1e300"]


START = datetime(2031, 3, 2, 8, 0, tzinfo=UTC)


def asked(ask, selector: str | None, **extra) -> dict:
    body = ask(1, **extra)
    if selector is not None:
        body["devices"][0]["selector"] = selector
    return body


@pytest.fixture
def calls(as_acme, lab, ask):
    def run(selector: str | None) -> list[int]:
        codes = []
        for path in ("/api/v1/capacity/preview", "/api/v1/reservations"):
            answer = as_acme.post(path, asked(ask, selector), format="json")
            codes.append(answer.status_code)
            if path.endswith("reservations") and answer.status_code == 201:
                released = as_acme.post(f"/api/v1/reservations/{answer.json()['id']}/release", format="json")
                codes.append(released.status_code)
        body = asked(
            ask,
            selector,
            during={"start": START.isoformat(), "end": (START + timedelta(hours=2)).isoformat()},
        )
        del body["duration"]
        codes.append(as_acme.post("/api/v1/capacity/earliest", body, format="json").status_code)
        return codes

    return run


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(KEYS), a=TYPED, b=TYPED, selector=st.integers(min_value=0, max_value=5))
# The report: an object under vramGiB made every pool-wide preview a 500.
@example(key="vramGiB", a=("object", {"a": 1}), b=("object", {"a": 1}), selector=1)
@example(key="vramGiB", a=("huge integer", (HUGE, 5000)), b=("big integer", 10**400), selector=1)
def test_any_stored_attribute_leaves_preview_earliest_and_booking_answering(calls, key, a, b, selector):
    event(f"type {a[0]}")
    store("node-a", key, a[1])
    store("node-b", key, b[1])

    codes = calls(selectors(key)[selector])

    assert all(code < 500 for code in codes), codes
    assert audit() == []
