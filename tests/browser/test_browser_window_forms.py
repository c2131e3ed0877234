"""Maintenance windows from the pages in a real browser: an operator schedules one over a node with
running work (its tenant reads the notice on the reservation page), is shown a bad form's errors by
their fields, schedules one over a pool and cancels it; screenshots of each."""

from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def typed(hours: float) -> str:
    moment = (datetime.now(UTC) + timedelta(hours=hours)).replace(minute=0, second=0, microsecond=0)
    return moment.strftime("%Y-%m-%dT%H:%M")


def fill(page, start, end, reason, nodes=None):
    form = page.locator("#window-form")
    if nodes is not None:
        form.locator("[name=window-nodes]").fill(nodes)
    form.locator("[name=window-start]").fill(start)
    form.locator("[name=window-end]").fill(end)
    form.locator("[name=window-reason]").fill(reason)
    form.get_by_role("button", name="Schedule window").click()


def test_an_operator_schedules_and_cancels_windows_from_the_pages_and_the_tenant_is_told(
    login, demo, browser, shots
):
    from capacity.models import Allocation, MaintenanceWindow

    running = Allocation.objects.get(reservation__idempotency_key="demo-now-2", released_at__isnull=True)
    node, pool, pk = running.node.name, running.node.pool.slug, running.reservation_id
    page = login("operator")
    page.goto(f"{demo}/nodes/{node}/")
    # A bad form: the error by its field, nothing written.
    fill(page, typed(6), typed(2), "PSU swap")
    expect(page.locator("#id_window-end-error")).to_have_text("end: the window must end after it starts")
    expect(page.locator("#window-list tr", has_text="PSU swap")).to_have_count(0)
    page.locator("#maintenance-windows").scroll_into_view_if_needed()
    shots(page, "node-window-form-error")
    fill(page, typed(3), typed(7), "PSU swap")
    result = page.locator("#window-result")
    expect(result).to_contain_text("scheduled")
    expect(result).to_contain_text(f"#{pk}")  # told: its GPUs there go at the start
    expect(page.locator("#window-list tr", has_text="PSU swap")).to_have_count(1)
    made = MaintenanceWindow.objects.get(reason="PSU swap").pk
    expect(page.locator(".tl-lane.tl-node", has_text="Maintenance")).to_contain_text("PSU swap")
    page.locator("#maintenance-windows").scroll_into_view_if_needed()
    shots(page, "node-window-scheduled")

    context = browser.new_context(viewport={"width": 1366, "height": 900})
    tenant = login("acme", context.new_page())
    tenant.goto(f"{demo}/reservations/{pk}/")
    told = tenant.locator("#conditions tr", has_text="MaintenanceScheduled")
    expect(told).to_contain_text(f"on {node}")
    expect(told).to_contain_text("PSU swap")
    expect(tenant.locator("#maintenance-at")).to_contain_text(f"window {made} on {node}")
    told.scroll_into_view_if_needed()
    shots(tenant, "reservation-maintenance-scheduled")
    tenant.goto(f"{demo}/nodes/{node}/")
    expect(tenant.locator("#window-list")).to_contain_text("PSU swap")
    expect(tenant.locator("#window-form")).to_have_count(0)

    page.goto(f"{demo}/pools/{pool}/")
    fill(page, typed(24 * 5), typed(24 * 5 + 8), "cooling loop", nodes="")
    row = page.locator("#window-list tr", has_text="cooling loop")
    expect(row).to_contain_text("the whole pool")
    expect(page.locator(f"#availability-{pool}")).to_contain_text("cooling loop")  # the chart, out of band
    page.locator("#maintenance-windows").scroll_into_view_if_needed()
    shots(page, "pool-windows")
    page.on("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="✕ Cancel").click()
    expect(page.locator("#window-list tr", has_text="cooling loop")).to_have_count(0)
    expect(page.locator(f"#availability-{pool}")).not_to_contain_text("cooling loop")
    page.locator("#window-list tr", has_text="PSU swap").get_by_role("button", name="✕ Cancel").click()
    expect(page.locator("#window-list tr", has_text="PSU swap")).to_have_count(0)
    tenant.goto(f"{demo}/reservations/{pk}/")
    expect(tenant.locator("#conditions tr", has_text="MaintenanceScheduled")).to_contain_text("was cancelled")
    expect(tenant.locator("#maintenance-at")).to_have_count(0)
    context.close()
