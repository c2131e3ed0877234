"""Reservations over HTTP: get and list (filtered, paged by cursor), each caller seeing only its own."""

from urllib.parse import parse_qs, urlsplit

import pytest

from capacity import services
from capacity.models import Reservation
from inventory import services as nodes


def test_getting_a_reservation_answers_what_create_answered(as_acme, lab, ask):
    created = as_acme.post("/api/v1/reservations", ask(2), format="json").json()
    response = as_acme.get(f"/api/v1/reservations/{created['id']}")
    assert (response.status_code, response.json()) == (200, created)


def test_another_tenants_reservation_is_not_found(as_acme, as_globex, lab, ask):
    theirs = as_globex.post("/api/v1/reservations", ask(1, tenant="globex"), format="json").json()
    response = as_acme.get(f"/api/v1/reservations/{theirs['id']}")
    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "message": f"no reservation {theirs['id']}"}


@pytest.mark.parametrize("rid", ["12345", "abc", "-1", "1.5"])
def test_a_reservation_that_does_not_exist_is_not_found(as_acme, tenant, rid):
    response = as_acme.get(f"/api/v1/reservations/{rid}")
    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "message": f"no reservation {rid}"}


def test_the_list_holds_only_the_callers_reservations_newest_first(as_acme, as_globex, lab, ask):
    first = as_acme.post("/api/v1/reservations", ask(1), format="json").json()
    as_globex.post("/api/v1/reservations", ask(1, tenant="globex"), format="json")
    second = as_acme.post("/api/v1/reservations", ask(1), format="json").json()
    data = as_acme.get("/api/v1/reservations").json()
    assert (len(data["results"]), data["next"], data["previous"]) == (2, None, None)
    assert [r["id"] for r in data["results"]] == [second["id"], first["id"]]
    assert data["results"][1] == first


def test_an_operator_lists_everyones_reservations(as_operator, as_acme, as_globex, lab, ask):
    as_acme.post("/api/v1/reservations", ask(1), format="json")
    as_globex.post("/api/v1/reservations", ask(1, tenant="globex"), format="json")
    data = as_operator.get("/api/v1/reservations").json()
    assert sorted(r["tenantId"] for r in data["results"]) == ["acme", "globex"]
    assert [
        r["tenantId"] for r in as_operator.get("/api/v1/reservations?tenant=globex").json()["results"]
    ] == ["globex"]


def test_a_tenant_filtering_on_another_tenant_sees_nothing(as_acme, as_globex, lab, ask):
    as_globex.post("/api/v1/reservations", ask(1, tenant="globex"), format="json")
    assert as_acme.get("/api/v1/reservations?tenant=globex").json()["results"] == []


def test_the_list_filters_by_status_and_pool(as_acme, lab, ask):
    placed = as_acme.post("/api/v1/reservations", ask(1), format="json").json()
    nodes.cordon("node-a")
    nodes.cordon("node-b")
    pending = as_acme.post("/api/v1/reservations", ask(1), format="json").json()
    assert [r["id"] for r in as_acme.get("/api/v1/reservations?status=pending").json()["results"]] == [
        pending["id"]
    ]
    assert [r["id"] for r in as_acme.get("/api/v1/reservations?status=placed").json()["results"]] == [
        placed["id"]
    ]
    assert as_acme.get("/api/v1/reservations?pool=other").json()["results"] == []
    assert len(as_acme.get("/api/v1/reservations?pool=lab-pool").json()["results"]) == 2


def test_an_unknown_status_filter_is_invalid_input(as_acme, tenant):
    response = as_acme.get("/api/v1/reservations?status=done")
    assert response.status_code == 400
    assert response.json() == {
        "code": "INVALID_INPUT",
        "message": "status: must be one of pending, queued, placed, released, preempted",
    }


def test_the_list_is_paged_by_cursor_forwards_and_back(as_acme, lab, ask):
    made = [as_acme.post("/api/v1/reservations", ask(1), format="json").json()["id"] for _ in range(5)]
    first = as_acme.get("/api/v1/reservations?page_size=2").json()
    assert ([r["id"] for r in first["results"]], first["previous"]) == (made[:2:-1], None)
    assert "page_size=2" in first["next"] and "cursor=" in first["next"]
    second = as_acme.get(first["next"]).json()
    assert [r["id"] for r in second["results"]] == made[2:0:-1]
    last = as_acme.get(second["next"]).json()
    assert ([r["id"] for r in last["results"]], last["next"]) == ([made[0]], None)
    back = as_acme.get(last["previous"]).json()
    assert [r["id"] for r in back["results"]] == made[2:0:-1]
    assert [r["id"] for r in as_acme.get(back["previous"]).json()["results"]] == made[:2:-1]
    # A booking made while paging shows on the first page, not twice further on.
    newer = as_acme.post("/api/v1/reservations", ask(1), format="json").json()["id"]
    assert [r["id"] for r in as_acme.get(first["next"]).json()["results"]] == made[2:0:-1]
    assert as_acme.get("/api/v1/reservations?page_size=1").json()["results"][0]["id"] == newer


def test_a_cursor_tampered_with_or_from_another_list_is_refused_naming_it(as_acme, as_operator, lab, ask):
    for _ in range(3):
        as_acme.post("/api/v1/reservations", ask(1), format="json")
    link = as_acme.get("/api/v1/reservations?page_size=1").json()["next"]
    cursor = parse_qs(urlsplit(link).query)["cursor"][0]
    refused = {
        "code": "INVALID_INPUT",
        "message": "cursor: not a cursor this list gave out: follow the next and previous links as they are",
    }
    for bad in ("x", cursor[:-2] + "zz", "cD0xMDA=", "", cursor.replace("eyJ", "eyK", 1)):
        answer = as_acme.get("/api/v1/reservations", {"cursor": bad})
        assert answer.status_code == 400, bad
        assert answer.json()["code"] == "INVALID_INPUT", bad
    assert as_acme.get("/api/v1/reservations", {"cursor": cursor[:-2] + "zz"}).json() == refused
    assert as_acme.get("/api/v1/reservations", {"cursor": cursor}).status_code == 200
    # A cursor is signed for its list: the nodes list does not take the reservations' one.
    assert as_operator.get("/api/v1/nodes", {"cursor": cursor}).json() == refused


def test_a_page_size_over_the_cap_is_refused_naming_it(as_acme, as_operator, lab):
    assert len(as_acme.get("/api/v1/reservations?page_size=500").json()["results"]) == 0
    for path in ("/api/v1/reservations", "/api/v1/nodes", "/api/v1/pools"):
        answer = as_operator.get(f"{path}?page_size=501")
        assert answer.status_code == 400, path
        assert answer.json() == {"code": "INVALID_INPUT", "message": "page_size: at most 500"}, path
    # "last" names a page (DRF's last page), never a size: it answered 500 once the cap was checked.
    answer = as_operator.get("/api/v1/reservations?page_size=last")
    assert answer.status_code == 400
    assert answer.json() == {"code": "INVALID_INPUT", "message": "page_size: must be a whole number from 1"}


def test_a_page_holds_at_most_max_page_bytes_and_next_goes_on_from_the_first_item_cut(
    as_acme, lab, ask, monkeypatch
):
    """Seven reservations, pages of at most 2.5 of them in bytes: every page is cut, none lost."""
    from config.api import pages as base

    made = [as_acme.post("/api/v1/reservations", ask(1), format="json").json() for _ in range(7)]
    cap = int(2.5 * len(base.JSONRenderer().render(made[0])))
    monkeypatch.setattr(base, "MAX_PAGE_BYTES", cap)
    seen, url, pages = [], "/api/v1/reservations?page_size=5", 0
    while url:
        response = as_acme.get(url)
        data = response.json()
        items = data["results"]
        assert 1 <= len(items) < 5
        assert sum(len(base.JSONRenderer().render(item)) + 1 for item in items) <= cap
        seen += [item["id"] for item in items]
        url, pages = data["next"], pages + 1
    assert seen == [r["id"] for r in made][::-1]  # newest first, each once
    assert pages >= 3


def test_listing_reservations_runs_the_same_queries_for_many_as_for_one(
    as_acme, lab, ask, django_assert_max_num_queries
):
    as_acme.post("/api/v1/reservations", ask(1), format="json")
    as_acme.get("/api/v1/reservations")  # warm the user's scope and content types
    with django_assert_max_num_queries(8) as one:
        as_acme.get("/api/v1/reservations")
    # Read now: the next request's request_started signal clears the connection's query log.
    queries_for_one = len(one)
    for _ in range(6):
        as_acme.post("/api/v1/reservations", ask(1), format="json")
    with django_assert_max_num_queries(queries_for_one):
        data = as_acme.get("/api/v1/reservations").json()
    assert len(data["results"]) == 7


def test_a_user_without_a_tenant_sees_and_books_nothing(make_user, client_for, lab, ask, tenant):
    client = client_for(make_user("drifter"))
    assert client.get("/api/v1/reservations").json()["results"] == []
    assert client.post("/api/v1/reservations", ask(1), format="json").status_code == 403


def test_the_batched_allocations_of_the_list_match_allocations_of(as_acme, lab, ask, make_node):
    """Book MIG slices and whole GPUs; list and detail show the same atoms (slices, never their parent)."""
    from capacity.rollups import refresh_rollups
    from inventory.models import Device

    node = make_node("node-mig", gpus=1)
    gpu = Device.objects.get(node=node)
    Device.objects.bulk_create(
        Device(node=node, uuid=f"MIG-{i}", device_class="mig-1g.10gb", parent=gpu, index=i) for i in range(2)
    )
    refresh_rollups([node.pool_id])
    as_acme.post("/api/v1/reservations", ask(4), format="json")
    as_acme.post(
        "/api/v1/reservations", {**ask(1), "devices": [{"class": "mig-1g.10gb", "count": 2}]}, format="json"
    )
    listed = {r["id"]: r["allocations"] for r in as_acme.get("/api/v1/reservations").json()["results"]}
    for reservation in Reservation.objects.all():
        one = as_acme.get(f"/api/v1/reservations/{reservation.pk}").json()["allocations"]
        assert listed[reservation.pk] == one
        assert [a["atoms"] for a in one] == [a["atoms"] for a in services.allocations_of(reservation)]
    assert ["MIG-0", "MIG-1"] in [[atom for a in allocs for atom in a["atoms"]] for allocs in listed.values()]
