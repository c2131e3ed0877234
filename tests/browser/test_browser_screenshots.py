"""Screenshots of the main pages at 1366×900: to BERTH_SCREENSHOTS (e.g. docs/screenshots), else a temp dir.

The run also checks that every page renders in a real browser; set BERTH_SCREENSHOTS to refresh the
committed images.
"""

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


@pytest.fixture
def shots(tmp_path):
    folder = Path(os.environ.get("BERTH_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)

    def shoot(page, name):
        path = folder / f"{name}.png"
        page.screenshot(path=str(path))
        assert path.stat().st_size > 10_000
        return path

    return shoot


def test_screenshots_of_the_operator_pages(login, demo, shots):
    page = login("operator")
    expect(page.locator("h1")).to_have_text("Pools")
    shots(page, "pools")
    for name, url in [
        ("pool-detail", "/pools/pcie-batch/"),
        ("pool-detail-mig", "/pools/a100-mig/"),
        ("node-detail", "/nodes/sfo2-pcie-14/"),
        ("node-detail-mig", "/nodes/sfo2-a100-01/"),
    ]:
        page.goto(f"{demo}{url}")
        expect(page.locator("h1")).to_be_visible()
        shots(page, name)

    page.goto(f"{demo}/preview/")
    page.select_option("#id_tenant", "globex")
    page.select_option("#id_pool", "h100-prod")
    page.fill("#id_count", "4")
    page.check("#id_nvlink")
    page.fill("#id_vcpu", "32")
    page.get_by_role("button", name="Preview").click()
    answer = page.locator("#answer")
    expect(answer).to_contain_text("Fits")
    answer.locator("details.rejected summary").first.click()
    shots(page, "preview")

    page.fill("#id_count", "9")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#pending-reason")).to_contain_text("no node fits (24 nodes)")
    shots(page, "preview-nothing-fits")


def test_screenshots_of_the_tenant_pages(login, demo, shots):
    page = login("acme")
    page.goto(f"{demo}/book/")
    page.select_option("#id_pool", "h100-prod")
    page.fill("#id_count", "16")
    page.get_by_role("button", name="Book").click()
    expect(page.locator("#booking-result")).to_contain_text("pending")
    page.select_option("#id_pool", "pcie-batch")
    page.fill("#id_count", "2")
    page.fill("#id_vcpu", "16")
    page.fill("#id_memory", "128")
    page.get_by_role("button", name="Book").click()
    expect(page.locator("#booking-result")).to_contain_text("placed")
    shots(page, "booking")
    page.goto(f"{demo}/reservations/")
    expect(page.locator("h1")).to_have_text("My reservations")
    shots(page, "reservations")


def test_screenshot_of_a_booking_queued_for_the_pool_lease_placer(login, demo, shots, settings):
    from capacity.conf import placer_config
    from capacity.placers.batch import place_queued

    settings.CAPACITY = {**settings.CAPACITY, "PLACER": "pool-lease"}
    page = login("acme")
    page.goto(f"{demo}/book/")
    page.select_option("#id_pool", "pcie-batch")
    page.fill("#id_count", "2")
    page.get_by_role("button", name="Book").click()
    result = page.locator("#booking-result")
    expect(result).to_contain_text("pending")
    expect(result).to_contain_text("Queued: queued for the pool's placer")
    shots(page, "booking-queued")
    page.goto(f"{demo}/reservations/")
    expect(page.locator("table.reservations")).to_contain_text("Queued: queued for the pool's placer")
    shots(page, "reservations-queued")
    assert len(place_queued(placer_config()).placed) == 1
    page.reload()
    expect(page.locator("table.reservations")).not_to_contain_text("Queued:")
