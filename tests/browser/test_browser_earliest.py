"""In Chromium: a preview that does not fit now shows its earliest start, and its button books that window."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def _fill_pool(pool: str, hours: int) -> None:
    """Book every GPU of the pool for the next `hours` hours, one node at a time."""
    from capacity import services
    from capacity.models import Quota
    from inventory.models import Node

    Quota.objects.filter(tenant__slug="globex").update(limit=100_000)  # the filler is not what is tested
    for node in Node.objects.filter(pool__slug=pool, cordoned=False, maintenance=False):
        others = list(Node.objects.filter(pool__slug=pool).exclude(pk=node.pk).values_list("name", flat=True))
        for gpus in (8, 4, 2, 1):
            while True:
                result = services.reserve(
                    {
                        "tenantId": "globex",
                        "poolId": pool,
                        "devices": [{"class": "gpu", "count": gpus}],
                        "duration": f"{hours}h",
                        "excludeNodes": others,
                    }
                )
                if result.reservation.status != "placed":
                    services.release(result.reservation.pk)
                    break


def test_the_earliest_start_books_that_window(login, demo):
    from capacity.models import Reservation

    _fill_pool("pcie-batch", 5)
    page = login("operator")
    page.goto(f"{demo}/preview/")
    page.select_option("#id_tenant", "acme")
    page.select_option("#id_pool", "pcie-batch")
    page.fill("#id_count", "2")
    page.fill("#id_duration", "2h")
    page.get_by_role("button", name="Preview").click()
    earliest = page.locator("#earliest")
    expect(earliest).to_contain_text("earliest start: ")
    folder = os.environ.get("BERTH_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / "preview-earliest.png"))
    before = Reservation.objects.count()
    earliest.get_by_role("button", name="Book that window").click()
    expect(page.locator("h1")).to_contain_text("Reservation")
    made = Reservation.objects.order_by("-pk").first()
    assert Reservation.objects.count() == before + 1
    assert made.status == "placed"
    assert made.tenant.slug == "acme"
