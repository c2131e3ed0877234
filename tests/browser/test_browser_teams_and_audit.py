"""In Chromium: an operator makes a team, is warned it has no GPU quota, sets one; the audit shows it;
a booking awaiting approval reads so in the list. Screenshots: team, audit, reservations-awaiting.
"""

import pytest
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def test_a_team_made_from_the_pages_and_its_audit(login, demo, shots):
    page = login("operator")
    page.get_by_role("link", name="Teams").click()
    page.fill("#id_slug", "lab3")
    page.fill("#id_name", "Lab Three")
    page.get_by_role("button", name="Create team").click()
    page.wait_for_url(f"{demo}/teams/lab3/")
    page.fill("#id_member-user", "nobody")
    page.get_by_role("button", name="Add member").click()
    expect(page.locator("#members .field-error")).to_contain_text("no user nobody")
    page.fill("#id_member-user", "globex")
    page.get_by_role("button", name="Add member").click()
    expect(page.locator("#member-globex")).to_be_visible()
    page.select_option("#id_share-pool", "h100-prod")
    page.fill("#id_share-guaranteed", "4")
    page.get_by_role("button", name="Set share").click()
    expect(page.locator("#no-quota-warning")).to_contain_text("its share of h100-prod included")
    expect(page.locator("#id_quota-limit")).to_have_value("4")  # offered: its guarantee
    shots(page, "team")
    page.get_by_role("button", name="Set quota").click()
    expect(page.locator("#quota-gpu")).to_contain_text("4")
    expect(page.locator("#no-quota-warning")).to_have_count(0)

    page.get_by_role("link", name="Audit", exact=True).click()
    page.fill("#id_actor", "operator")
    page.get_by_role("button", name="Show").click()
    rows = page.locator("#audit-rows tbody tr")
    expect(rows.first).to_contain_text("quota.set")
    expect(page.locator("#audit-rows")).to_contain_text("membership:lab3/globex")
    page.wait_for_url("**/audit/?actor=operator**")  # the filter is in the address: a link to share
    shots(page, "audit")


def test_a_booking_awaiting_approval_reads_so_in_the_list(login, demo, shots):
    from policy.pool_policy import set_policy

    set_policy("h100-prod", {"approval_above_gpu_hours": 100})
    page = login("acme")
    page.goto(f"{demo}/book/")
    page.select_option("#id_pool", "h100-prod")
    page.fill("#id_count", "8")
    page.fill("#id_duration", "2d")
    page.get_by_role("button", name="Book").click()
    expect(page.locator("#booking-result h2")).to_contain_text("awaiting approval")
    page.goto(f"{demo}/reservations/")
    first = page.locator("table.reservations tbody tr").first
    expect(first).to_contain_text("⌛ awaiting approval")
    expect(first).not_to_contain_text("✓ placed")
    shots(page, "reservations-awaiting")
