"""Lent GPUs on the pages: the owner's Reclaim button, the spot reservation's badge, the pool's week."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from capacity import services
from capacity.models import Reservation
from capacity.models.reservations import IDLE
from inventory.models import Pool
from policy.models import PoolPolicy


@pytest.fixture
def lent(make_node, tenant, other_tenant, book):
    make_node("node-a", gpus=2)
    PoolPolicy.objects.create(pool=Pool.objects.get(slug="lab-pool"), lend_idle=True)
    owner = book(gpus=2)
    idle = {"type": IDLE, "status": "True", "reason": "LowUtilization", "message": "0 %"}
    Reservation.objects.filter(pk=owner.pk).update(conditions=[idle])
    work = book(tenant="globex", gpus=2, priority="spot", duration="4h")
    assert work.lent_from == [owner.pk]
    return owner, work


def test_the_owner_reclaims_its_lent_gpus_with_the_button(lent, alice):
    owner, work = lent
    page = alice.get(f"/reservations/{owner.pk}/").content.decode()
    assert "Reclaim lent GPUs" in page
    response = alice.post(f"/reservations/{owner.pk}/reclaim/")
    assert response.status_code == 302
    assert Reservation.objects.get(pk=work.pk).status == "preempted"
    assert "Reclaim lent GPUs" not in alice.get(f"/reservations/{owner.pk}/").content.decode()


def test_the_spot_reservation_wears_the_lent_badge_without_naming_another_tenants_booking(lent, bob, op):
    owner, work = lent
    page = bob.get(f"/reservations/{work.pk}/").content.decode()
    assert "on lent GPUs" in page and f"#{owner.pk}" not in page
    assert (
        lent_sentence(page) == "Runs on idle GPUs lent by another booking, until its owner takes them back."
    )
    assert f"#{owner.pk}" in op.get(f"/reservations/{work.pk}/").content.decode()


def lent_sentence(page: str) -> str:
    """Return the lent-GPU sentence of a reservation page as read, without its markup."""
    return re.sub(r"<[^>]+>", "", re.search(r'<span[^>]*id="lent-sentence">(.*?)</span></p>', page, re.S)[1])


def test_the_lent_sentence_names_the_owners_booking_and_turns_past_once_the_work_ended(lent, alice, op):
    owner, work = lent
    page = op.get(f"/reservations/{work.pk}/").content.decode()
    assert (
        lent_sentence(page)
        == f"Runs on idle GPUs lent by booking #{owner.pk}, until its owner takes them back."
    )
    assert alice.post(f"/reservations/{owner.pk}/reclaim/").status_code == 302
    page = op.get(f"/reservations/{work.pk}/").content.decode()
    assert lent_sentence(page) == f"Ran on idle GPUs lent by booking #{owner.pk}, until it was preempted."
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", page)  # the preemption's time too, in UTC words


def test_lent_work_released_by_its_owner_says_where_it_ran(lent, op):
    owner, work = lent
    services.release(work.pk)
    page = op.get(f"/reservations/{work.pk}/").content.decode()
    assert lent_sentence(page) == f"Ran on idle GPUs lent by booking #{owner.pk}."


def test_another_tenant_cannot_reclaim_the_booking(lent, bob):
    owner, work = lent
    assert bob.post(f"/reservations/{owner.pk}/reclaim/").status_code == 404
    assert Reservation.objects.get(pk=work.pk).status == "placed"


def test_the_pool_page_shows_the_weeks_lending(lent, op):
    text = op.get("/pools/lab-pool/").content.decode()
    assert "GPU-hours lent" in text and "0 reclaimed by their owners" in text


def test_with_a_spot_notice_the_owners_page_says_until_when_its_gpus_are_shared(lent, alice):
    owner, work = lent
    PoolPolicy.objects.filter(pool__slug="lab-pool").update(spot_notice=timedelta(minutes=10))
    before = timezone.now()
    assert alice.post(f"/reservations/{owner.pk}/reclaim/").status_code == 302
    assert Reservation.objects.get(pk=work.pk).status == "placed"
    page = alice.get(f"/reservations/{owner.pk}/").content.decode()
    assert "Reclaim lent GPUs" not in page
    assert "Lent GPUs reclaimed: shared with the spot work until" in page
    at = (before + timedelta(minutes=10)).strftime("%Y-%m-%d %H:%M")
    after = (timezone.now() + timedelta(minutes=10)).strftime("%Y-%m-%d %H:%M")
    assert at in page or after in page
