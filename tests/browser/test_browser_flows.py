"""The main flows in a real browser: an operator cordons and previews, a tenant books and releases."""

import pytest
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def nav(page, name):
    """Return the top navigation's link called name."""
    return page.get_by_role("navigation", name="Main").get_by_role("link", name=name, exact=True)


def mark_page(page):
    """Tag the loaded document, so a test can tell an in-place swap from a page load."""
    page.evaluate("window.__berthMark = 'same-page'")


def still_same_page(page):
    return page.evaluate("window.__berthMark") == "same-page"


def test_an_operator_cordons_a_node_and_the_row_changes_in_place(login, demo):
    from inventory.models import Node

    page = login("operator")
    page.click("text=pcie-batch")
    row = page.locator("#row-sfo2-pcie-02")
    expect(row.locator(".badge")).to_have_text("✓ schedulable")
    mark_page(page)
    row.get_by_role("button", name="⊘ Cordon").click()
    expect(row.locator(".badge")).to_have_text("⊘ cordoned")
    expect(row).to_have_class("node-row blocked")
    expect(row.get_by_role("button", name="↺ Uncordon")).to_be_visible()
    assert still_same_page(page)
    assert Node.objects.get(name="sfo2-pcie-02").cordoned
    row.get_by_role("button", name="↺ Uncordon").click()
    expect(row.locator(".badge")).to_have_text("✓ schedulable")
    assert not Node.objects.get(name="sfo2-pcie-02").cordoned


def test_the_pool_filter_swaps_the_list_and_pushes_the_url(login, demo):
    page = login("operator")
    page.goto(f"{demo}/pools/h100-prod/")
    mark_page(page)
    page.select_option("#id_state", "cordoned")
    expect(page.locator("tr.node-row")).to_have_count(2)
    expect(page).to_have_url(f"{demo}/pools/h100-prod/?q=&state=cordoned&label=&free_gpus=")
    page.fill("#id_free_gpus", "lots")
    expect(page.locator("#filter-error-free_gpus")).to_have_text("free_gpus must be a whole number")
    assert still_same_page(page)


def test_a_preview_shows_each_rejected_nodes_filter_and_reason(login, demo):
    page = login("operator")
    nav(page, "Preview").click()
    page.fill("#id_selector", "vramGiB >=")
    expect(page.locator("#selector-check")).to_contain_text("✕")
    page.fill("#id_selector", "vramGiB>=80")
    expect(page.locator("#selector-check")).to_have_text("✓ reads as vramGiB >= 80")
    page.fill("#id_selector", "")
    page.select_option("#id_tenant", "globex")
    page.select_option("#id_pool", "h100-prod")
    page.fill("#id_count", "8")
    mark_page(page)
    page.get_by_role("button", name="Preview").click()
    answer = page.locator("#answer")
    expect(answer).to_contain_text("Fits")
    group = answer.locator("details.rejected", has_text="cordoned")
    expect(group.locator("summary")).to_have_text("2 × cordoned")
    group.locator("summary").click()
    expect(group.locator("tr", has_text="ams1-dgx-03")).to_contain_text("eligible")
    expect(group.locator("tr", has_text="ams1-dgx-03")).to_contain_text("cordoned")
    expect(answer.locator("summary", has_text="NoSchedule: dedicated=acme")).to_be_visible()
    assert still_same_page(page)


def test_a_tenant_books_sees_the_reservation_and_releases_it(login, demo):
    from capacity.models import Reservation

    page = login("acme")
    nav(page, "Book").click()
    expect(page.locator("#id_tenant")).to_have_value("acme")
    page.select_option("#id_pool", "pcie-batch")
    page.fill("#id_count", "2")
    page.get_by_role("button", name="Book").click()
    result = page.locator("#booking-result")
    expect(result).to_contain_text("placed")
    reservation = Reservation.objects.filter(tenant__slug="acme").order_by("-pk").first()
    assert reservation.status == "placed"
    expect(result).to_contain_text(f"#{reservation.pk}")

    nav(page, "Reservations").click()
    row = page.locator(f"#reservation-{reservation.pk}")
    expect(row).to_contain_text("placed")
    expect(page.locator("tbody tr", has_text="globex")).to_have_count(0)
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("link", name="Release…").click()
    expect(row).to_contain_text("released")
    reservation.refresh_from_db()
    assert reservation.status == "released"


def test_booking_and_releasing_work_without_javascript(new_context, demo):
    from capacity.models import Reservation
    from devtools.demo import demo_password

    page = new_context(java_script_enabled=False).new_page()
    page.goto(f"{demo}/accounts/login/")
    page.fill("#id_username", "globex")
    page.fill("#id_password", demo_password())
    page.click("button[type=submit]")
    page.goto(f"{demo}/book/")
    page.select_option("#id_pool", "a100-mig")
    page.fill("#id_count", "1")
    page.get_by_role("button", name="Book").click()
    expect(page.locator("h1")).to_contain_text("Reservation #")
    reservation = Reservation.objects.filter(tenant__slug="globex").order_by("-pk").first()
    page.get_by_role("link", name="Release…").click()
    expect(page.locator("h1")).to_have_text(f"Release reservation #{reservation.pk}?")
    page.get_by_role("button", name="Release").click()
    expect(page).to_have_url(f"{demo}/reservations/")
    reservation.refresh_from_db()
    assert reservation.status == "released"


def test_a_refused_htmx_request_says_so_instead_of_doing_nothing(login, demo):
    from django.contrib.auth.models import User

    from inventory.models import Node

    page = login("operator")
    page.goto(f"{demo}/pools/h100-prod/")
    # The operator loses the role while the page is open; the server refuses the next action.
    User.objects.filter(username="operator").update(is_staff=False, is_superuser=False)
    User.objects.get(username="operator").groups.clear()
    page.locator("#row-ams1-dgx-01").get_by_role("button", name="⊘ Cordon").click()
    expect(page.locator("#flash")).to_have_text("You may not do that (403). Operators can.")
    assert not Node.objects.get(name="ams1-dgx-01").cordoned
