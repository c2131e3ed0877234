"""Series and the pool's limits at a frozen clock, on every weekday and the awkward month ends.

The clock is an argument (`now`), so each day in devtools.dates.ALL_DAYS is checked on every run,
whatever day the run is: the occurrences of "every Monday and Wednesday, 4 times" from the next
Monday, the first one past maxLeadTime, and maxFutureGpuHours counting every occurrence.

lab-pool: node-a with 4 GPUs.
"""

from datetime import UTC, datetime, timedelta

import pytest

from capacity.models import Reservation, Series
from capacity.placement import CapacityError
from devtools.dates import ALL_DAYS
from policy.pool_policy import set_policy
from series.book import reserve_series

from booking import config

pytestmark = pytest.mark.django_db


def next_monday(now: datetime) -> datetime:
    """Return the first Monday 09:00 UTC at least a day after `now`."""
    days = (7 - now.weekday()) % 7 or 7
    return now.replace(hour=9, minute=0, second=0, microsecond=0) + timedelta(days=days)


def body(start: datetime, gpus: int = 1) -> dict:
    return {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": gpus}],
        "during": {"start": start.isoformat(), "end": (start + timedelta(hours=3)).isoformat()},
        "repeat": {"freq": "weekly", "byDay": ["MO", "WE"], "count": 4},
    }


@pytest.fixture(params=ALL_DAYS)
def now(request) -> datetime:
    return datetime.fromisoformat(request.param).replace(tzinfo=UTC)


def test_the_occurrences_are_mondays_and_wednesdays_from_the_next_monday(now, tenant, make_node):
    make_node("node-a", gpus=4)
    monday = next_monday(now)
    series = reserve_series(body(monday), now=now, config=config())
    starts = [o.start for o in series.occurrences]
    assert starts == [monday + timedelta(days=d) for d in (0, 2, 7, 9)]
    assert [s.weekday() for s in starts] == [0, 2, 0, 2]
    assert {o.status for o in series.occurrences} == {"placed"}


def test_the_first_occurrence_past_max_lead_time_is_named(now, tenant, make_node):
    make_node("node-a", gpus=4)
    monday = next_monday(now)
    third, fourth = monday + timedelta(days=7), monday + timedelta(days=9)
    # Whole days reaching the third occurrence's start, and never the fourth's (two days later).
    lead = -(-(third - now) // timedelta(days=1))
    set_policy("lab-pool", {"max_lead_time": timedelta(days=lead)})
    with pytest.raises(CapacityError) as refused:
        reserve_series(body(monday), now=now, config=config())
    assert refused.value.code == "POLICY_LIMIT"
    assert refused.value.message.startswith(f"maxLeadTime is {lead}d; this starts in ")
    assert refused.value.message.endswith(f"(occurrence 4, {fourth:%Y-%m-%d %H:%M} UTC)")
    assert not Reservation.objects.exists() and not Series.objects.exists()


def test_max_future_gpu_hours_counts_every_occurrence(now, tenant, make_node):
    make_node("node-a", gpus=4)
    set_policy("lab-pool", {"max_future_gpu_hours": 20})
    with pytest.raises(CapacityError) as refused:
        reserve_series(body(next_monday(now), gpus=2), now=now, config=config())
    # 4 occurrences × 2 GPUs × 3 hours
    assert refused.value.message == "maxFutureGpuHours is 20; acme would hold 24"
    assert not Reservation.objects.exists() and not Series.objects.exists()
    assert len(reserve_series(body(next_monday(now)), now=now, config=config()).occurrences) == 4
