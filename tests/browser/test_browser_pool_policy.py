"""The pool page's Policy section in a real browser: an operator edits it in place (htmx), the section stays."""

import os
from datetime import timedelta
from pathlib import Path

import pytest
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def test_an_operator_saves_the_policy_in_place_and_sees_it(login, demo, tmp_path):
    from capacity import services
    from policy.models import PoolPolicy

    kept = services.reserve(
        {
            "tenantId": "acme",
            "poolId": "h100-prod",
            "devices": [{"class": "gpu", "count": 8}],
            "duration": "3d",
            "keepWhenIdle": True,
        }
    ).reservation
    page = login("operator")
    page.goto(f"{demo}/pools/h100-prod/")
    section = page.locator("#policy")
    expect(section).to_contain_text("the site's defaults")
    expect(section.locator(".kept-list")).to_contain_text(f"#{kept.pk} acme")
    page.fill("#id_policy-idleWarnAfter", "90m")
    page.fill("#id_policy-idleReleaseAfter", "-2h")
    page.click("#policy button[type=submit]")
    expect(section.locator(".has-error")).to_have_count(1)
    expect(section).to_contain_text("idleReleaseAfter must look like 30m")
    page.fill("#id_policy-idleReleaseAfter", "6h")
    page.click("#policy button[type=submit]")
    expect(section).to_contain_text("set for this pool")
    expect(section.locator("dd").first).to_contain_text("90m")
    row = PoolPolicy.objects.get(pool__slug="h100-prod")
    assert (row.idle_warn_after, row.idle_release_after) == (timedelta(minutes=90), timedelta(hours=6))
    folder = Path(os.environ.get("BERTH_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    section.screenshot(path=str(folder / "pool-policy.png"))
    # The owner's side: the reservation's page says it is kept and offers to hand it back.
    page.goto(f"{demo}/reservations/{kept.pk}/")
    expect(page.locator("body")).to_contain_text("⚓ kept when idle")
    page.click("text=Let the pool release it when idle")
    expect(page.locator("body")).to_contain_text("Keep when idle")
    page.screenshot(path=str(tmp_path / "reservation-kept.png"), full_page=True)
