"""Screenshots of what-if runs: one in progress and its result, and one with shares per tenant.

Screenshots at 1366×900 to BERTH_SCREENSHOTS (e.g. docs/screenshots), else a temp dir
(the `shots` fixture); the run also checks that every page renders in a real browser.
"""

import pytest
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def test_screenshots_of_a_what_if_run_its_progress_and_its_result(login, demo, shots):
    """The operator asks what 4 more DGX nodes and the held-back ones would do; the page polls while
    the worker runs it."""
    from whatif import runs as whatif_runs

    page = login("operator")
    page.goto(f"{demo}/pools/h100-prod/")
    page.get_by_role("link", name="What if").click()
    page.fill("#id_requests", "600")
    page.fill("#id_rate", "10")
    page.fill("#id_add_nodes", "ams1-dgx-01=4")
    page.fill("#id_restore_nodes", "ams1-dgx-03, ams1-dgx-07")
    shots(page, "whatif-form")
    page.get_by_role("button", name="Run").click()
    expect(page.locator("#run")).to_contain_text("Waiting for the worker")
    assert whatif_runs.run_once().endswith("done")
    # The page polls every second and swaps in the result by itself.
    expect(page.locator("#figures-heading")).to_have_text("Side by side", timeout=10_000)
    expect(page.locator(".whatif-chart svg")).to_have_count(3)
    expect(page.locator(".whatif-left-out")).to_contain_text("ams1-dgx-04 (cordoned)")
    expect(page.locator(".whatif-restored")).to_contain_text("ams1-dgx-03 (was cordoned)")
    shots(page, "whatif-result")


def test_screenshots_of_a_what_if_run_with_shares_per_tenant(login, demo, shots):
    """The operator tries guarantees of 96 and 48 GPUs in h100-prod; the tenants' table shows what
    each booked, waited, borrowed and had reclaimed on both sides."""
    from whatif import runs as whatif_runs

    page = login("operator")
    page.goto(f"{demo}/pools/h100-prod/whatif/")
    page.fill("#id_requests", "600")
    page.fill("#id_rate", "20")
    page.fill("#id_shares", "acme=96, globex=48:24:0")
    page.get_by_role("button", name="Run").click()
    expect(page.locator("#run")).to_contain_text("Waiting for the worker")
    assert whatif_runs.run_once().endswith("done")
    expect(page.locator("#figures-heading")).to_have_text("Side by side", timeout=10_000)
    expect(page.locator(".whatif-shares")).to_contain_text(
        "changed acme 96, globex 48 borrowing ≤ 24 lending ≤ 0"
    )
    expect(page.locator(".whatif-tenants")).to_contain_text("Borrowed (GPU-h)")
    page.locator("#tenants-heading").scroll_into_view_if_needed()
    shots(page, "whatif-shares")
