"""POST /api/v1/capacity/earliest and preview hints, over DRF's client."""

from datetime import UTC, datetime, timedelta

from capacity.models import Reservation


def window(start: datetime, hours: int) -> dict:
    return {"start": start.isoformat(), "end": (start + timedelta(hours=hours)).isoformat()}


START = datetime(2031, 3, 2, 8, 0, tzinfo=UTC)


def test_earliest_answers_the_end_of_what_is_in_the_way_and_books_nothing(as_acme, lab, ask):
    for _ in range(2):
        body = {**ask(4), "during": window(START, 6)}
        del body["duration"]
        assert as_acme.post("/api/v1/reservations", body, format="json").json()["status"] == "placed"
    query = {**ask(4), "during": window(START + timedelta(hours=1), 2)}
    del query["duration"]
    response = as_acme.post("/api/v1/capacity/earliest", query, format="json")
    assert response.status_code == 200
    data = response.json()
    assert data["fits"] is True
    assert (data["start"], data["end"]) == ("2031-03-02T14:00:00Z", "2031-03-02T16:00:00Z")
    assert data["horizon"] == "14d"
    assert data["candidates"][0]["nodeId"] in {"node-a", "node-b"}
    assert len(data["candidates"][0]["atoms"]) == 4
    assert Reservation.objects.count() == 2


def test_earliest_within_a_short_horizon_says_nothing_fits(as_acme, lab, ask):
    for _ in range(2):
        body = {**ask(4), "during": window(START, 48)}
        del body["duration"]
        as_acme.post("/api/v1/reservations", body, format="json")
    query = {**ask(4), "during": window(START, 2), "horizon": "36h"}
    del query["duration"]
    data = as_acme.post("/api/v1/capacity/earliest", query, format="json").json()
    assert data == {
        "fits": False,
        "candidates": [],
        "reason": "no start fits before 2031-03-03T20:00Z (horizon 36h)",
        "horizon": "36h",
    }


def test_earliest_refuses_a_bad_horizon_and_unknown_fields(as_acme, lab, ask):
    response = as_acme.post("/api/v1/capacity/earliest", {**ask(1), "horizon": "120d"}, format="json")
    assert (response.status_code, response.json()) == (
        400,
        {"code": "INVALID_INPUT", "message": "horizon must be at most 90d"},
    )
    response = as_acme.post("/api/v1/capacity/earliest", {**ask(1), "soon": True}, format="json")
    assert response.json() == {"code": "INVALID_INPUT", "message": "soon is not a known field"}


def test_earliest_names_a_request_no_node_could_ever_take(as_acme, lab, ask):
    data = as_acme.post(
        "/api/v1/capacity/earliest", ask(1, devices=[{"class": "tpu", "count": 1}]), format="json"
    )
    assert data.json()["reason"] == "no node in lab-pool has class tpu: classes are gpu"


def test_a_tenant_may_not_ask_for_another_tenants_pool(as_acme, globex_node, ask):
    response = as_acme.post(
        "/api/v1/capacity/earliest", ask(1, tenant="globex", pool="globex-pool"), format="json"
    )
    assert response.status_code in (403, 404)
    assert set(response.json()) == {"code", "message"}


def test_preview_answers_hints_when_nothing_fits(as_acme, lab, ask):
    for gpus, hours in ((4, 6), (2, 3)):
        body = {**ask(gpus), "during": window(START, hours)}
        del body["duration"]
        assert as_acme.post("/api/v1/reservations", body, format="json").json()["status"] == "placed"
    query = {**ask(4), "during": window(START, 2)}
    del query["duration"]
    data = as_acme.post("/api/v1/capacity/preview", query, format="json").json()
    assert data["fits"] is False
    assert data["hints"][0] == "fits from 2031-03-02T11:00Z on node-b"
    assert data["hints"][1] == "fits with 2 gpu on 1 node"
