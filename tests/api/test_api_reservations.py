"""Reservations over HTTP: create (placed, pending, idempotent), get, list, release, and tenant isolation."""

from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import pytest

from capacity import services
from capacity.models import Quota, Reservation
from capacity.placement import define_scheduler_plugin
from inventory import services as nodes


def test_creating_a_reservation_answers_201_with_the_placed_reservation(as_acme, lab, ask):
    response = as_acme.post("/api/v1/reservations", ask(2), format="json")
    assert response.status_code == 201
    data = response.json()
    assert set(data) == {
        "id", "tenantId", "poolId", "status", "priority", "binding", "start", "end",
        "createdAt", "releasedAt", "borrowedGpus", "keepWhenIdle", "preemptAt", "awaitingApproval", "conditions",
        "allocations", "request", "usage",
    }  # fmt: skip
    assert data["awaitingApproval"] is None  # a pool that asks no approval
    assert data["usage"] is None  # no sample from its node yet
    assert data["borrowedGpus"] == 0.0  # a pool without shares
    assert (data["tenantId"], data["poolId"], data["status"]) == ("acme", "lab-pool", "placed")
    assert (data["priority"], data["binding"], data["releasedAt"], data["conditions"]) == (
        "regular",
        "none",
        None,
        [],
    )
    [allocation] = data["allocations"]
    assert allocation["nodeId"] == "node-a"
    assert allocation["atoms"] == ["GPU-node-a-0", "GPU-node-a-1"]
    assert (allocation["start"], allocation["end"]) == (data["start"], data["end"])
    assert allocation["releasedAt"] is None
    assert data["request"] == ask(2)
    start = datetime.fromisoformat(data["start"])
    assert (datetime.fromisoformat(data["end"]) - start).days == 1


def test_a_window_in_iso_8601_books_exactly_that_window(as_acme, lab, ask):
    body = ask(1)
    del body["duration"]
    body["during"] = {"start": "2030-01-01T00:00:00Z", "end": "2030-01-02T00:00:00+00:00"}
    data = as_acme.post("/api/v1/reservations", body, format="json").json()
    assert (data["start"], data["end"]) == ("2030-01-01T00:00:00Z", "2030-01-02T00:00:00Z")


def test_a_window_in_epoch_milliseconds_books_exactly_that_window(as_acme, lab, ask):
    body = ask(1)
    del body["duration"]
    start = int(datetime(2030, 1, 1, tzinfo=UTC).timestamp() * 1000)
    body["during"] = {"start": start, "end": start + 3_600_000}
    data = as_acme.post("/api/v1/reservations", body, format="json").json()
    assert (data["start"], data["end"]) == ("2030-01-01T00:00:00Z", "2030-01-01T01:00:00Z")


def test_scalar_resources_are_claimed_on_the_node(as_acme, lab, ask):
    data = as_acme.post("/api/v1/reservations", ask(1, resources={"vcpu": 8}), format="json").json()
    assert data["allocations"][0]["resources"] == {"vcpu": 8}


def test_a_request_that_does_not_fit_is_created_pending_with_the_reason(as_acme, lab, ask):
    nodes.cordon("node-b")
    response = as_acme.post("/api/v1/reservations", ask(5), format="json")
    assert response.status_code == 201
    data = response.json()
    assert (data["status"], data["allocations"]) == ("pending", [])
    assert data["conditions"] == [
        {
            "type": "Unschedulable",
            "status": "True",
            "reason": "NoFit",
            "message": "no node fits (2 nodes): 1 × fits: 4 of 5 gpu free; 1 × cordoned",
        },
        # No node of the pool has 5 GPUs: named at once, and the placer does not retry it.
        {
            "type": "Unsatisfiable",
            "status": "True",
            "reason": "count",
            "message": "the largest node in lab-pool has 4 gpu",
        },
    ]


def test_a_request_that_fits_later_is_pending_without_unsatisfiable(as_acme, lab, ask):
    nodes.cordon("node-b")
    assert as_acme.post("/api/v1/reservations", ask(4), format="json").json()["status"] == "placed"
    later = as_acme.post("/api/v1/reservations", ask(4), format="json").json()
    assert later["status"] == "pending"
    assert [c["type"] for c in later["conditions"]] == ["Unschedulable"]


def test_the_same_idempotency_key_twice_makes_one_reservation(as_acme, lab, ask):
    first = as_acme.post("/api/v1/reservations", ask(1, idempotencyKey="job-1"), format="json")
    again = as_acme.post("/api/v1/reservations", ask(1, idempotencyKey="job-1"), format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["allocations"] == first.json()["allocations"]
    assert Reservation.objects.count() == 1


def test_the_same_idempotency_key_with_other_input_is_a_conflict(as_acme, lab, ask):
    as_acme.post("/api/v1/reservations", ask(1, idempotencyKey="job-1"), format="json")
    response = as_acme.post("/api/v1/reservations", ask(2, idempotencyKey="job-1"), format="json")
    assert response.status_code == 409
    assert response.json() == {
        "code": "IDEMPOTENCY_CONFLICT",
        "message": "idempotency key job-1 was already used for a different request",
    }


def test_a_malformed_idempotency_key_is_invalid_input(as_acme, lab, ask):
    response = as_acme.post("/api/v1/reservations", ask(1, idempotencyKey="no spaces"), format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"
    assert response.json()["message"].startswith("idempotencyKey must be 1 to 200 letters")


def test_a_request_beyond_the_quota_is_quota_exceeded(as_acme, lab, ask, tenant):
    Quota.objects.create(tenant=tenant, resource="gpu", limit=2)
    response = as_acme.post("/api/v1/reservations", ask(3), format="json")
    assert response.status_code == 409
    assert response.json() == {
        "code": "QUOTA_EXCEEDED",
        "message": "quota exceeded for acme: gpu 0 used + 3 requested > limit 2",
    }
    assert not Reservation.objects.exists()


def test_a_whole_node_lease_takes_a_node_and_a_lease_naming_devices_is_invalid_input(as_acme, lab, ask):
    body = {k: v for k, v in ask(1, binding="node").items() if k != "devices"}
    response = as_acme.post("/api/v1/reservations", body, format="json")
    assert response.status_code == 201, response.json()
    data = response.json()
    assert (data["status"], data["binding"]) == ("placed", "node")
    [allocation] = data["allocations"]
    assert allocation["atoms"] == [f"GPU-{allocation['nodeId']}-{i}" for i in range(len(allocation["atoms"]))]
    response = as_acme.post("/api/v1/reservations", ask(1, binding="node"), format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"
    assert response.json()["message"].startswith("devices: a whole-node lease takes every device")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"devices": [{"class": "gpu", "count": 0}]}, "devices[0].count must be a positive integer"),
        ({"devices": [{"class": "gpu", "count": "2"}]}, "devices[0].count must be a positive integer"),
        ({"devices": [{"class": "gpu", "count": 65}]}, "devices: at most 64 devices in all, got 65"),
        (
            {"devices": [], "resources": {}},
            "devices or resources: a request must claim at least one device or resource",
        ),
        ({"topology": "ring"}, 'topology must be "any" or "nvlink-all"'),
        ({"duration": "3 days"}, "duration must look like 30m, 12h, 3d or 2w"),
        ({"tenantId": ""}, "tenantId must be a non-empty string"),
        ({"priority": "urgent"}, 'priority must be "regular" or "spot"'),
        ({"surprise": 1}, "surprise is not a known field"),
        ({"devices": [{"class": "gpu", "count": 1, "selector": "gpuProduct in ("}]}, "devices[0].selector"),
    ],
)
def test_invalid_input_names_the_field_at_fault(as_acme, lab, ask, change, message):
    response = as_acme.post("/api/v1/reservations", {**ask(1), **change}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"
    assert response.json()["message"].startswith(message)


def test_a_tenant_may_not_book_for_another_tenant(as_acme, lab, ask, other_tenant):
    response = as_acme.post("/api/v1/reservations", ask(1, tenant="globex"), format="json")
    assert response.status_code == 403
    assert response.json() == {"code": "FORBIDDEN", "message": "you may not book for tenant globex"}


def test_a_tenant_may_not_book_into_a_pool_it_may_not_use(as_acme, lab, ask, globex_node):
    response = as_acme.post("/api/v1/reservations", ask(1, pool="globex-pool"), format="json")
    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "message": "no pool globex-pool"}


def test_an_operator_books_for_any_tenant(as_operator, lab, ask, tenant):
    response = as_operator.post("/api/v1/reservations", ask(1), format="json")
    assert (response.status_code, response.json()["tenantId"]) == (201, "acme")


def test_creating_passes_the_admission_context_to_admit_hooks(as_acme, acme, lab, ask, settings):
    seen = []
    recorder = define_scheduler_plugin("recorder", admit=lambda request, context: seen.append(context))
    settings.CAPACITY = {
        **settings.CAPACITY,
        "SCHEDULER": {**settings.CAPACITY["SCHEDULER"], "PLUGINS": [recorder]},
    }
    as_acme.post("/api/v1/reservations", ask(1), format="json")
    assert seen == [
        {"tenant": "acme", "identity": "acme", "identityKind": "user", "action": "reservations.create"}
    ]


def test_an_admit_hook_refusal_reaches_the_caller(as_acme, lab, ask, settings):
    from capacity.placement import CapacityError

    def refuse(request, context):
        raise CapacityError("FORBIDDEN", "gangs are for operators")

    plugin = define_scheduler_plugin("refuser", admit=refuse)
    settings.CAPACITY = {
        **settings.CAPACITY,
        "SCHEDULER": {**settings.CAPACITY["SCHEDULER"], "PLUGINS": [plugin]},
    }
    response = as_acme.post("/api/v1/reservations", ask(1), format="json")
    assert (response.status_code, response.json()) == (
        403,
        {"code": "FORBIDDEN", "message": "gangs are for operators"},
    )
    assert not Reservation.objects.exists()


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


def test_releasing_ends_the_bookings_and_answers_the_released_reservation(as_acme, lab, ask):
    created = as_acme.post("/api/v1/reservations", ask(2), format="json").json()
    response = as_acme.post(f"/api/v1/reservations/{created['id']}/release")
    assert response.status_code == 200
    data = response.json()
    assert data["status"] == "released"
    assert data["releasedAt"] is not None
    assert data["allocations"][0]["releasedAt"] == data["releasedAt"]
    # The GPUs are free again: four fit on node-a.
    assert (
        as_acme.post("/api/v1/capacity/preview", ask(4), format="json").json()["candidates"][0]["nodeId"]
        == "node-a"
    )


def test_releasing_twice_answers_the_released_reservation_again(as_acme, lab, ask):
    created = as_acme.post("/api/v1/reservations", ask(1), format="json").json()
    first = as_acme.post(f"/api/v1/reservations/{created['id']}/release").json()
    again = as_acme.post(f"/api/v1/reservations/{created['id']}/release")
    assert (again.status_code, again.json()) == (200, first)


def test_a_tenant_cannot_release_another_tenants_reservation(as_acme, as_globex, lab, ask):
    theirs = as_globex.post("/api/v1/reservations", ask(1, tenant="globex"), format="json").json()
    response = as_acme.post(f"/api/v1/reservations/{theirs['id']}/release")
    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "message": f"no reservation {theirs['id']}"}
    assert Reservation.objects.get(pk=theirs["id"]).status == "placed"


def test_an_operator_releases_any_reservation(as_operator, as_globex, lab, ask):
    theirs = as_globex.post("/api/v1/reservations", ask(1, tenant="globex"), format="json").json()
    assert as_operator.post(f"/api/v1/reservations/{theirs['id']}/release").json()["status"] == "released"


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


def test_a_selector_on_device_attributes_places(as_acme, lab, ask):
    """Select on a device attribute that only node-b's GPUs carry."""
    from inventory.models import Device

    Device.objects.filter(node__name="node-b").update(attributes={"gpuProduct": "H100-SXM5-80GB"})
    body = ask(1)
    body["devices"][0]["selector"] = "gpuProduct in (H100-SXM5-80GB)"
    response = as_acme.post("/api/v1/reservations", body, format="json")
    assert response.status_code == 201
    assert response.json()["allocations"][0]["nodeId"] == "node-b"


def test_with_the_pool_lease_placer_create_answers_201_pending_with_a_queued_condition(
    as_acme, lab, ask, settings
):
    settings.CAPACITY = {**settings.CAPACITY, "PLACER": "pool-lease"}
    response = as_acme.post("/api/v1/reservations", {**ask(1), "wait": {"timeoutMs": 0}}, format="json")
    assert response.status_code == 201
    data = response.json()
    assert (data["status"], data["allocations"]) == ("pending", [])
    assert data["conditions"] == [
        {"type": "Queued", "status": "True", "reason": "PoolLease", "message": "queued for the pool's placer"}
    ]
    from capacity.conf import placer_config
    from capacity.placers.batch import place_queued

    assert place_queued(placer_config()).placed == [data["id"]]
    placed = as_acme.get(f"/api/v1/reservations/{data['id']}").json()
    assert (placed["status"], placed["conditions"]) == ("placed", [])


@pytest.mark.parametrize("wait", [{"timeoutMs": 30_001}, {"timeoutMs": 1.5}, "1s"])
def test_wait_beyond_30_s_or_not_in_milliseconds_is_invalid_input(as_acme, lab, ask, wait):
    response = as_acme.post("/api/v1/reservations", {**ask(1), "wait": wait}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "code": "INVALID_INPUT",
        "message": "wait must be {timeoutMs} with 0 to 30000 milliseconds",
    }
    assert not Reservation.objects.exists()


def test_a_create_that_preempts_the_callers_own_spot_work_says_so_in_its_201(as_acme, lab, ask):
    """Both 4-GPU nodes hold acme's spot work; acme's regular 4 GPUs take one of them back."""
    spot = [
        as_acme.post("/api/v1/reservations", ask(4, priority="spot"), format="json").json() for _ in range(2)
    ]
    response = as_acme.post("/api/v1/reservations", ask(4), format="json")
    assert response.status_code == 201 and response.json()["status"] == "placed"
    [taken] = [s["id"] for s in spot if Reservation.objects.get(pk=s["id"]).status == "preempted"]
    assert response.json()["preempted"] == {"reservations": [taken], "others": 0}
    plain = as_acme.post("/api/v1/reservations", ask(1, priority="spot"), format="json").json()
    assert "preempted" not in plain
