"""Approvals over the API: a booking above approvalAboveGpuHours is placed but held for an operator."""

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.assignments import assignments
from capacity.models import DeviceBooking, Reservation
from policy.approvals import release_unapproved
from webhooks.models import Event, Subscription

POLICY = "/api/v1/pools/lab-pool/policy"


@pytest.fixture(autouse=True)
def site_idle_settings(settings):
    settings.IDLE_AFTER, settings.IDLE_RELEASE_AFTER = timedelta(hours=2), None


@pytest.fixture
def approvals(as_operator, lab, tenant):
    """lab-pool asks approval above 100 GPU-hours, holding 24 h; the operator hears the events."""
    response = as_operator.put(POLICY, {"approvalAboveGpuHours": 100}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["approvalHold"] == "1d"


@pytest.fixture
def subscribed(operator):
    return Subscription.objects.create(
        owner=operator,
        url="https://hooks.example.com/berth",
        events=["reservation.awaiting_approval", "reservation.approved", "reservation.denied"],
        secret="whsec_x",
    )


def create(client, ask, **kw):
    response = client.post("/api/v1/reservations", ask(**kw), format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def condition(data: dict, type_: str) -> dict | None:
    return next((c for c in data["conditions"] if c["type"] == type_), None)


def handed_out(node: str) -> set:
    """Return the reservations the node's agent is handed now or next."""
    feed, _ = assignments(node)
    return {
        str((d.get(slot) or {}).get("reservationId"))
        for d in feed["devices"]
        for slot in ("now", "next")
        if d.get(slot)
    }


def test_a_booking_above_the_limit_is_placed_but_awaits_approval_and_is_not_handed_out(
    as_acme, approvals, subscribed, ask
):
    big = create(as_acme, ask, gpus=4, duration="2d")  # 192 GPU-hours
    small = create(as_acme, ask, gpus=1, duration="1d")  # 24: below the limit
    assert big["status"] == "placed"
    held = condition(big, "AwaitingApproval")
    assert held is not None and held["reason"] == "AboveApprovalLimit", big["conditions"]
    assert held["message"].startswith("192 GPU-hours, above approvalAboveGpuHours 100"), held
    assert condition(small, "AwaitingApproval") is None and small["awaitingApproval"] is None
    assert big["awaitingApproval"] == {"holdUntil": held["message"].rsplit(" ", 1)[1], "gpuHours": 192.0}
    # Its devices are held, as any placed booking's.
    assert DeviceBooking.objects.filter(allocation__reservation_id=big["id"]).count() == 4
    handed = handed_out("node-a") | handed_out("node-b")
    assert str(big["id"]) not in handed
    assert str(small["id"]) in handed
    kinds = list(Event.objects.filter(reservation_id=big["id"]).values_list("type", flat=True))
    assert kinds == ["reservation.awaiting_approval"], kinds


def test_an_operator_approves_once_and_the_agent_then_hands_it_out(
    as_acme, as_operator, approvals, subscribed, ask
):
    big = create(as_acme, ask, gpus=4, duration="2d")
    response = as_operator.post(f"/api/v1/reservations/{big['id']}/approve")
    assert response.status_code == 200, response.json()
    data = response.json()
    assert data["status"] == "placed" and condition(data, "AwaitingApproval") is None
    assert condition(data, "Approved")["message"] == "approved by operator"
    assert str(big["id"]) in handed_out("node-a") | handed_out("node-b")
    assert Event.objects.filter(reservation_id=big["id"], type="reservation.approved").count() == 1
    again = as_operator.post(f"/api/v1/reservations/{big['id']}/approve")
    assert again.status_code == 409
    assert again.json() == {"code": "CONFLICT", "message": f"reservation {big['id']} is already approved"}


def test_a_denial_releases_it_with_the_reason_and_needs_one(as_acme, as_operator, approvals, subscribed, ask):
    big = create(as_acme, ask, gpus=4, duration="2d")
    url = f"/api/v1/reservations/{big['id']}/deny"
    missing = as_operator.post(url, {}, format="json")
    assert missing.status_code == 400 and missing.json()["code"] == "INVALID_INPUT"
    assert missing.json()["message"].startswith("reason:")
    assert Reservation.objects.get(pk=big["id"]).status == "placed"  # nothing written
    for bad in ("two\nlines", "a tab\there", "bidi \u202e override", "del\x7f"):
        refused = as_operator.post(url, {"reason": bad}, format="json")
        assert refused.status_code == 400 and refused.json() == {
            "code": "INVALID_INPUT",
            "message": "reason must not contain control characters or line breaks",
        }
    assert Reservation.objects.get(pk=big["id"]).status == "placed"  # nothing written
    response = as_operator.post(url, {"reason": "the grant covers 64 GPU-hours"}, format="json")
    assert response.status_code == 200, response.json()
    data = response.json()
    assert data["status"] == "released"
    released = condition(data, "Released")
    assert released["reason"] == "ApprovalDenied"
    assert released["message"] == "operator: denied: the grant covers 64 GPU-hours"
    assert not DeviceBooking.objects.filter(
        allocation__reservation_id=big["id"], during__contains=timezone.now() + timedelta(hours=1)
    ).exists()
    assert Event.objects.filter(reservation_id=big["id"], type="reservation.denied").count() == 1
    # Approving or denying a released booking is a conflict, not a change.
    late = as_operator.post(f"/api/v1/reservations/{big['id']}/approve")
    assert late.status_code == 409
    assert late.json()["message"] == f"reservation {big['id']} is released: it does not await approval"


def test_a_booking_below_the_limit_does_not_await_approval(as_acme, as_operator, approvals, ask):
    small = create(as_acme, ask, gpus=1, duration="1d")
    response = as_operator.post(f"/api/v1/reservations/{small['id']}/approve")
    assert response.status_code == 409
    assert response.json()["message"] == f"reservation {small['id']} is placed: it does not await approval"


def test_tenants_cannot_approve_their_own_403_or_another_tenants_404(as_acme, as_globex, approvals, ask):
    big = create(as_acme, ask, gpus=4, duration="2d")
    own = as_acme.post(f"/api/v1/reservations/{big['id']}/approve")
    assert own.status_code == 403 and own.json()["code"] == "FORBIDDEN"
    # Who may comes before what is asked: a tenant's deny without a reason is 403, not 400.
    assert as_acme.post(f"/api/v1/reservations/{big['id']}/deny", {}, format="json").status_code == 403
    other = as_globex.post(f"/api/v1/reservations/{big['id']}/deny", {"reason": "no"}, format="json")
    assert other.status_code == 404 and other.json()["code"] == "NOT_FOUND"
    assert condition(as_acme.get(f"/api/v1/reservations/{big['id']}").json(), "AwaitingApproval")


def test_past_its_hold_an_undecided_booking_is_released_with_a_condition(as_acme, as_operator, lab, ask):
    as_operator.put(POLICY, {"approvalAboveGpuHours": 10, "approvalHold": "2h"}, format="json")
    big = create(as_acme, ask, gpus=1, duration="1d")
    assert release_unapproved(timezone.now() + timedelta(minutes=90)) == 0
    assert release_unapproved(timezone.now() + timedelta(hours=2, minutes=1)) == 1
    row = Reservation.objects.get(pk=big["id"])
    assert row.status == "released"
    released = row.condition("Released")
    assert released["reason"] == "ApprovalExpired" and "(approvalHold)" in released["message"], released


def test_the_worker_runs_the_expiry_as_the_policy_apps_job(as_acme, as_operator, lab, ask):
    """The approval expiry is the policy app's worker job: a round with nothing due says nothing."""
    from capacity.worker_jobs import JOBS

    as_operator.put(POLICY, {"approvalAboveGpuHours": 10, "approvalHold": "2h"}, format="json")
    create(as_acme, ask, gpus=1, duration="1d")
    assert JOBS["approval-expiry"].run_once() == ""  # its hold has two hours to run


def test_approval_fields_are_checked_and_the_hold_is_not_off(as_operator, lab):
    for body, message in (
        ({"approvalAboveGpuHours": 0}, "approvalAboveGpuHours must be a whole number"),
        ({"approvalHold": None}, "approvalHold must be a duration such as 24h"),
        ({"approvalHold": "0h"}, "approvalHold"),
    ):
        response = as_operator.put(POLICY, body, format="json")
        assert response.status_code == 400, (body, response.json())
        assert response.json()["message"].startswith(message), response.json()


def test_a_repair_moves_a_held_booking_and_it_stays_held_with_one_event(
    as_operator, as_acme, lab, subscribed, ask, django_capture_on_commit_callbacks
):
    as_operator.put(POLICY, {"approvalAboveGpuHours": 10}, format="json")
    held = create(as_acme, ask, gpus=2, duration="1d")  # 48 GPU-hours
    node = held["allocations"][0]["nodeId"]
    broken = held["allocations"][0]["atoms"][0]
    devices = [
        {"uuid": f"GPU-{node}-{i}", "index": i, "healthy": f"GPU-{node}-{i}" != broken} for i in range(4)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = as_operator.post(f"/api/v1/nodes/{node}/report", {"devices": devices}, format="json")
    assert response.status_code == 200
    after = as_acme.get(f"/api/v1/reservations/{held['id']}").json()
    assert condition(after, "Repaired") is not None, after["conditions"]
    assert condition(after, "AwaitingApproval") == condition(held, "AwaitingApproval")
    assert str(held["id"]) not in handed_out("node-a") | handed_out("node-b")
    kinds = list(Event.objects.filter(reservation_id=held["id"]).values_list("type", flat=True))
    assert kinds.count("reservation.awaiting_approval") == 1, kinds
    assert "reservation.approved" not in kinds


def test_an_approval_names_the_operator_and_the_request_in_the_audit(as_operator, as_acme, approvals, ask):
    held = create(as_acme, ask, gpus=4, duration="2d")  # 192 GPU-hours, above 100
    answer = as_operator.post(
        f"/api/v1/reservations/{held['id']}/approve", {}, format="json", headers={"X-Request-Id": "approve-1"}
    )
    assert answer.status_code == 200, answer.json()
    rows = as_operator.get("/api/v1/audit", {"object": f"reservation:{held['id']}"}).json()["results"]
    assert (rows[0]["actor"], rows[0]["requestId"]) == ("operator", "approve-1")
