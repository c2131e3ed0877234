"""A series booked from the form in a real Chromium ("repeat weekly on … until …"), and an occurrence's
page with its series. Screenshots to BERTH_SCREENSHOTS (e.g. docs/screenshots), else a temp dir."""

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def test_a_weekly_series_from_the_booking_form_and_an_occurrences_page(login, demo, tmp_path):
    folder = Path(os.environ.get("BERTH_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    today = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    monday = today + timedelta(days=(7 - today.weekday()) % 7 or 7)
    page = login("acme")
    page.goto(f"{demo}/book/")
    page.select_option("#id_pool", "h100-prod")
    page.fill("#id_count", "4")
    page.fill("#id_start", monday.strftime("%Y-%m-%d %H:%M"))
    page.fill("#id_end", (monday + timedelta(hours=3)).strftime("%Y-%m-%d %H:%M"))
    page.select_option("#id_repeat", "weekly")
    page.fill("#id_repeat_until", (monday + timedelta(weeks=4)).date().isoformat())
    # No day chosen: refused next to the days, nothing booked.
    page.get_by_role("button", name="Book").click()
    days = page.locator("#repeat-on-label").locator("xpath=ancestor::*[contains(@class,'field')][1]")
    expect(days).to_contain_text("the days must name at least one day")
    page.check("input[name=repeat_on][value=MO]")
    page.check("input[name=repeat_on][value=WE]")
    page.get_by_role("button", name="Book").click()
    # The form answers in place (htmx): the first occurrence and its series beside the form.
    expect(page.locator("#series")).to_contain_text("occurrence 1 of 9")
    page.locator(".series-fields").scroll_into_view_if_needed()
    path = folder / "book-series.png"
    page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000
    page.locator("#booking-result h2 a").click()
    page.wait_for_url(f"{demo}/reservations/*/")
    series = page.locator("#series")
    expect(series).to_contain_text("occurrence 1 of 9")
    expect(page.locator("#series-rule")).to_contain_text("FREQ=WEEKLY;BYDAY=MO,WE;UNTIL=")
    expect(page.locator("#series-occurrences tbody tr")).to_have_count(9)
    series.scroll_into_view_if_needed()
    path = folder / "series-occurrence.png"
    page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000
