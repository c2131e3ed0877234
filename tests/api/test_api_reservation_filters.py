"""GET /api/v1/reservations filters by pool, node, status and a window, with the page's FilterSet."""

from datetime import UTC, datetime

import pytest


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def book(client, gpus: int, start: str, end: str, tenant: str = "acme") -> dict:
    """Book `gpus` GPUs in lab-pool for [start, end) through the API; return the reservation."""
    body = {
        "tenantId": tenant,
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": gpus}],
        "during": {"start": ms(start), "end": ms(end)},
    }
    response = client.post("/api/v1/reservations", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def ids(client, query: str) -> list[int]:
    response = client.get(f"/api/v1/reservations?{query}")
    assert response.status_code == 200, response.json()
    return [r["id"] for r in response.json()["results"]]


@pytest.fixture
def february(as_acme, as_globex, lab):
    """acme: 4 GPUs on node-a Feb 01-03 and 4 on node-b Feb 02-04; globex: 1 GPU on node-a Mar 01-02."""
    a = book(as_acme, 4, "2027-02-01", "2027-02-03")
    b = book(as_acme, 4, "2027-02-02", "2027-02-04")
    g = book(as_globex, 1, "2027-03-01", "2027-03-02", tenant="globex")
    assert [x["allocations"][0]["nodeId"] for x in (a, b, g)] == ["node-a", "node-b", "node-a"]
    return a["id"], b["id"], g["id"]


def test_an_operator_filters_by_node(as_operator, february):
    a, b, g = february
    assert ids(as_operator, "node=node-a") == [g, a]
    assert ids(as_operator, "node=node-b") == [b]
    assert ids(as_operator, "node=no-such-node") == []


def test_a_tenant_filtering_by_node_sees_only_its_own(as_acme, february):
    a, _b, _g = february
    assert ids(as_acme, "node=node-a") == [a]


def test_the_window_finds_the_reservations_it_overlaps(as_operator, february):
    a, b, g = february
    assert ids(as_operator, "from=2027-02-03&to=2027-02-05") == [b]  # a ends as the window starts
    assert ids(as_operator, "from=2027-02-01T12:00&to=2027-02-02T00:00:01Z") == [b, a]
    assert ids(as_operator, "from=2027-02-20") == [g]
    assert ids(as_operator, "to=2027-02-02") == [a]
    assert ids(as_operator, f"from={ms('2027-02-28')}&to={ms('2027-03-31')}") == [g]


def test_filters_combine(as_operator, february):
    a, _b, g = february
    assert ids(as_operator, "node=node-a&from=2027-02-01&to=2027-02-28") == [a]
    assert ids(as_operator, "node=node-a&tenant=globex&status=placed&pool=lab-pool") == [g]
    assert ids(as_operator, "node=node-a&status=pending") == []


def test_a_reservation_released_early_is_not_in_a_window_after_its_release(as_operator, as_acme, february):
    a, b, _g = february
    as_acme.post(f"/api/v1/reservations/{b}/release")
    # Released now, long before February: it held nothing there; it still shows on its node.
    assert ids(as_operator, "from=2027-02-01&to=2027-02-28") == [a]
    assert ids(as_operator, "node=node-b") == [b]
    assert ids(as_operator, "node=node-b&status=released") == [b]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "from=yesterday",
            "from: must be an ISO 8601 date or time in UTC (2027-02-01, 2027-02-01T12:00) or epoch milliseconds",
        ),
        ("to=2027-02-30", "to: must be an ISO 8601 date or time in UTC"),
        ("from=" + "9" * 40, "from: must be an ISO 8601"),
        ("from=2027-02-03&to=2027-02-01", "to: must be after from"),
        ("from=2027-02-03&to=2027-02-03", "to: must be after from"),
        ("status=done&from=x", "status: must be one of pending, queued, placed, released, preempted"),
    ],
)
def test_a_filter_value_that_cannot_be_read_is_invalid_input_naming_it(as_operator, tenant, query, message):
    response = as_operator.get(f"/api/v1/reservations?{query}")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "INVALID_INPUT"
    assert body["message"].startswith(message), body


def test_the_next_link_keeps_the_filters(as_operator, as_acme, lab):
    made = [book(as_acme, 1, "2027-02-01", "2027-02-02") for _ in range(3)]
    query = "node=node-a&status=placed&from=2027-02-01&to=2027-02-10&page_size=2"
    first = as_operator.get(f"/api/v1/reservations?{query}").json()
    assert len(first["results"]) == 2
    nxt = first["next"]
    for kept in ("node=node-a", "status=placed", "from=2027-02-01", "to=2027-02-10", "cursor="):
        assert kept in nxt
    second = as_operator.get(nxt).json()
    assert [r["id"] for r in first["results"] + second["results"]] == [m["id"] for m in made][::-1]


def test_the_schema_documents_each_filter(as_operator):
    schema = as_operator.get("/api/schema/?format=json").json()
    parameters = schema["paths"]["/api/v1/reservations"]["get"]["parameters"]
    names = {p["name"] for p in parameters}
    assert {"tenant", "pool", "node", "status", "from", "to", "cursor", "page_size"} <= names
    window_end = next(p for p in parameters if p["name"] == "to")
    assert "epoch milliseconds" in window_end["description"]
