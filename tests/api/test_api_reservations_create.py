"""Reservations over HTTP: create (placed, pending, idempotent, validated, admitted) and who may book."""

from datetime import UTC, datetime

import pytest

from capacity.models import Quota, Reservation
from capacity.placement import define_scheduler_plugin
from inventory import services as nodes


def test_creating_a_reservation_answers_201_with_the_placed_reservation(as_acme, lab, ask):
    response = as_acme.post("/api/v1/reservations", ask(2), format="json")
    assert response.status_code == 201
    data = response.json()
    assert set(data) == {
        "id", "tenantId", "poolId", "status", "priority", "binding", "start", "end",
        "createdAt", "releasedAt", "borrowedGpus", "keepWhenIdle", "preemptAt", "awaitingApproval", "maintenance", "conditions",
        "allocations", "request", "usage", "seriesId",
    }  # fmt: skip
    assert data["seriesId"] is None  # not an occurrence of a series
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
