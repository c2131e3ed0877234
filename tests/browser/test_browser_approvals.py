"""The approval queue in a real browser: an operator sees a held booking and approves it."""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def test_an_operator_approves_a_held_booking_from_the_queue(login, demo, tmp_path):
    from capacity import services
    from capacity.models import Reservation
    from policy.pool_policy import set_policy

    set_policy("h100-prod", {"approval_above_gpu_hours": 100})
    held = services.reserve(
        {
            "tenantId": "acme",
            "poolId": "h100-prod",
            "devices": [{"class": "gpu", "count": 8}],
            "duration": "3d",
        }
    ).reservation
    assert held.condition("AwaitingApproval")
    page = login("operator")
    page.goto(f"{demo}/approvals/")
    row = page.locator(f"#approval-{held.pk}")
    expect(row).to_contain_text("acme")
    expect(row).to_contain_text("576")
    folder = Path(os.environ.get("BERTH_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / "approvals.png"), full_page=True)
    row.locator("button", has_text="Approve").click()
    expect(page.locator("body")).to_contain_text("Nothing awaits approval.")
    assert Reservation.objects.get(pk=held.pk).condition("Approved")
