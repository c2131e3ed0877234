"""Maintenance windows in a real browser: the node page's timeline and the pool's availability chart show them."""

import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def test_a_window_shows_on_the_node_timeline_and_the_pool_chart(login, demo, tmp_path):
    from capacity.models import Allocation
    from maintenance import windows as maintenance

    booked = Allocation.objects.filter(
        reservation__idempotency_key="demo-future-1", released_at__isnull=True
    ).first()
    node = booked.node.name
    start = (timezone.now() + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    made = maintenance.schedule(
        {"nodes": [node], "start": start.isoformat(), "end": (start + timedelta(hours=36)).isoformat(),
         "reason": "firmware update"},
        by="operator",
    )  # fmt: skip
    page = login("operator")
    page.goto(f"{demo}/nodes/{node}/")
    lane = page.locator(".tl-lane.tl-node", has_text="Maintenance")
    expect(lane).to_contain_text(f"window {made.window.pk}: firmware update")
    expect(page.locator(".tl-window-band").first).to_be_attached()
    folder = Path(os.environ.get("BERTH_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.locator("#node-timeline").screenshot(path=str(folder / "node-maintenance-window.png"))
    page.goto(f"{demo}/pools/{booked.node.pool.slug}/")
    figure = page.locator(f"#availability-{booked.node.pool.slug}")
    expect(figure).to_contain_text(f"maintenance window {made.window.pk} on {node}")
    expect(figure.locator("g.windows rect").first).to_be_attached()
    figure.screenshot(path=str(folder / "pool-maintenance-window.png"))
