"""The reservation page of pending work in a pool with shares says its place in words."""

import html
import re
from datetime import timedelta

from django.utils import timezone

from capacity import services
from capacity.conf import placer_config
from inventory.models import Pool, Tenant
from policy.models import PoolShare


def queue_line(page: str) -> str | None:
    found = re.search(r'<p class="reason queue" id="queue-place">(.*?)</p>', page, re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip() if found else None


def booked_last_week(tenant: str, gpus: int, days_ago: int, days: int):
    """Book `gpus` from `days_ago` for `days` days, as if asked then."""
    then = timezone.now() - timedelta(days=days_ago)
    data = {
        "tenantId": tenant,
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": gpus}],
        "during": {"start": then.isoformat(), "end": (then + timedelta(days=days)).isoformat()},
    }
    return services.reserve(data, now=then, config=placer_config()).reservation


def test_the_page_says_the_place_the_pool_and_the_teams_use_of_its_share(alice, bob, op, two_hosts, book):
    PoolShare.objects.create(
        pool=Pool.objects.get(slug="lab-pool"), tenant=Tenant.objects.get(slug="acme"), guaranteed_gpus=4
    )
    for _ in range(2):
        assert booked_last_week("acme", 4, days_ago=6, days=5).status == "placed"
    for _ in range(2):
        assert book("acme", gpus=4).status == "placed"
    theirs = book("globex", gpus=1)  # globex has no row: no figure, after acme's
    first, second = book("acme", gpus=1), book("acme", gpus=2)
    assert {r.status for r in (theirs, first, second)} == {"pending"}
    place = services.queue_places([second])[second.pk]
    figure = f"{place.fair_share:.1f}"
    assert 0.3 < place.fair_share < 1.5  # about 8 GPUs for 5 days out of 4 guaranteed, decayed

    mine = queue_line(alice.get(f"/reservations/{second.pk}/").text)
    assert mine == f"In the queue: 2nd of 3 in lab-pool; your team used {figure}× its share this week"
    assert queue_line(alice.get(f"/reservations/{first.pk}/").text).startswith(
        "In the queue: 1st of 3 in lab-pool;"
    )
    page = bob.get(f"/reservations/{theirs.pk}/").text
    assert queue_line(page) == "In the queue: 3rd of 3 in lab-pool; your team has no guaranteed share here"
    assert "acme" not in page.lower()
    # Operators read whose team it is.
    assert queue_line(op.get(f"/reservations/{second.pk}/").text) == (
        f"In the queue: 2nd of 3 in lab-pool; acme used {figure}× its share this week"
    )


def test_placed_work_and_a_pool_without_shares_say_nothing_of_a_queue(alice, two_hosts, book):
    placed = [book("acme", gpus=4) for _ in range(2)]
    waiting = book("acme", gpus=1)
    assert waiting.status == "pending"
    for r in (*placed, waiting):
        assert queue_line(alice.get(f"/reservations/{r.pk}/").text) is None
