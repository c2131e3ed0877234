"""The reservation page of spot work under notice says when it is taken back; the booking that waits says why."""

import re
from datetime import timedelta

import pytest

from capacity import services
from inventory.models import Pool
from policy.models import PoolPolicy


@pytest.fixture
def lab(make_node, tenant):
    return make_node("node-a", gpus=2)


def ask(priority="regular"):
    return {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": 2}],
        "duration": "1d",
        "priority": priority,
    }


def test_spot_work_under_notice_shows_preempted_at_and_the_regular_booking_starts_later(alice, lab):
    PoolPolicy.objects.create(pool=Pool.objects.get(slug="lab-pool"), spot_notice=timedelta(minutes=10))
    spot = services.reserve(ask("spot")).reservation
    regular = services.reserve(ask()).reservation
    page = alice.get(f"/reservations/{spot.pk}/").text
    shown = re.search(r'<div id="preempt-at"><dt>Preempted at</dt><dd>(.*?) UTC', page)
    assert shown is not None, page
    assert "PreemptAt" in page
    waiting = alice.get(f"/reservations/{regular.pk}/").text
    assert re.search(
        r'<div id="starts-later"><dt>Starts later</dt><dd>starts at .*\(spotNotice 10m\)</dd>', waiting
    )
    assert 'id="preempt-at"' not in waiting
