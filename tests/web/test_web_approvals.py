"""The approval queue page: operators see bookings awaiting approval and approve or deny them there."""

import re
from datetime import datetime

import pytest

from capacity.models import Reservation
from policy.pool_policy import set_policy


@pytest.fixture
def held(two_hosts, book):
    """A 4-GPU two-day booking in a pool that asks approval above 100 GPU-hours: awaiting."""
    set_policy("lab-pool", {"approval_above_gpu_hours": 100})
    reservation = book(gpus=4, duration="2d")
    assert reservation.condition("AwaitingApproval"), reservation.conditions
    return reservation


def test_the_queue_lists_what_awaits_and_an_operator_approves_it(op, held):
    response = op.get("/approvals/")
    assert response.status_code == 200
    text = response.content.decode()
    assert f"#{held.pk}" in text and "192" in text and "Approve" in text
    response = op.post(f"/approvals/{held.pk}/approve/")
    assert response.status_code == 302
    row = Reservation.objects.get(pk=held.pk)
    assert row.condition("AwaitingApproval") is None and row.condition("Approved")
    assert "Nothing awaits approval." in op.get("/approvals/").content.decode()


def test_a_denial_without_a_reason_is_shown_on_its_row_and_changes_nothing(op, held):
    response = op.post(f"/approvals/{held.pk}/deny/", {"reason": "  "})
    assert response.status_code == 400
    assert 'role="alert">reason: say why the booking is denied' in response.content.decode()
    assert Reservation.objects.get(pk=held.pk).status == "placed"
    assert op.post(f"/approvals/{held.pk}/deny/", {"reason": "over the grant"}).status_code == 302
    assert Reservation.objects.get(pk=held.pk).condition("Released")["reason"] == "ApprovalDenied"


def test_tenants_may_not_see_the_queue_nor_decide(alice, held):
    assert alice.get("/approvals/").status_code == 403
    assert alice.post(f"/approvals/{held.pk}/approve/").status_code == 403
    assert Reservation.objects.get(pk=held.pk).condition("AwaitingApproval")


def test_the_reservation_page_says_it_awaits_approval_to_its_owner_and_offers_operators_approve(
    op, alice, held
):
    mine = alice.get(f"/reservations/{held.pk}/").content.decode()
    assert 'id="awaiting-approval"' in mine and "192 GPU-hours, above approvalAboveGpuHours 100" in mine
    assert f"/approvals/{held.pk}/approve/" not in mine
    assert f"/approvals/{held.pk}/approve/" in op.get(f"/reservations/{held.pk}/").content.decode()


def test_hold_until_reads_as_a_utc_time_on_the_queue_and_the_reservation_page(op, held):
    until = datetime.fromisoformat(held.condition("AwaitingApproval")["holdUntil"])
    queue = op.get("/approvals/").content.decode()
    assert f'<td class="small">{until:%Y-%m-%d %H:%M} UTC</td>' in queue
    page = op.get(f"/reservations/{held.pk}/").text
    notice = re.search(r'id="awaiting-approval".*?</p>', page, re.S)[0]
    assert f"waits for an operator until {until:%Y-%m-%d %H:%M:%S} UTC." in notice
    assert (
        page.count(f"waits for an operator until {until:%Y-%m-%d %H:%M:%S} UTC") == 3
    )  # notice, conditions, history
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", queue + page)
