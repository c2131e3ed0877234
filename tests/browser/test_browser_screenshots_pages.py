"""Screenshots of the main pages: an operator's and a tenant's, not found, a node's history, charts,
webhooks and the usage report.

Screenshots at 1366×900 to BERTH_SCREENSHOTS (e.g. docs/screenshots), else a temp dir
(the `shots` fixture); the run also checks that every page renders in a real browser.
"""

import pytest
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def test_screenshots_of_the_operator_pages(login, demo, shots):
    page = login("operator")
    expect(page.locator("h1")).to_have_text("Pools")
    shots(page, "pools")
    for name, url in [
        ("pool-detail", "/pools/pcie-batch/"),
        ("pool-detail-mig", "/pools/a100-mig/"),
        ("node-detail", "/nodes/sfo2-pcie-14/"),
        ("node-detail-mig", "/nodes/sfo2-a100-01/"),
        ("node-detail-notready", "/nodes/sfo2-a100-09/"),
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
    # No node of h100-prod has 16 GPUs: refused next to the count, nothing created.
    expect(
        page.locator("#id_count").locator("xpath=ancestor::*[contains(@class,'field')][1]")
    ).to_contain_text("the largest node in h100-prod has 8 gpu")
    shots(page, "booking-never-fits")
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


def test_screenshots_of_not_found_and_of_a_locked_sign_in(login, demo, shots):
    page = login("acme")
    response = page.goto(f"{demo}/pool/h100-prod/")
    assert response.status == 404
    expect(page.locator("h1")).to_have_text("Not found")
    shots(page, "not-found")

    page.context.clear_cookies()
    page.goto(f"{demo}/accounts/login/")
    for attempt in range(5):
        page.fill("#id_username", "globex")
        page.fill("#id_password", f"wrong-{attempt}")
        page.click("button[type=submit]")
        page.wait_for_load_state()
    expect(page.locator("h1")).to_have_text("Sign-in locked for a while")
    expect(page.locator(".errors")).to_contain_text("locked for 15 minutes")
    shots(page, "sign-in-locked")


def test_screenshot_of_a_nodes_history(login, demo, shots):
    """The operator cordons a node with a reason, labels and taints it from its page, and reads
    who did what, when and why in the panel and in the history below the devices."""
    page = login("operator")
    page.goto(f"{demo}/nodes/sfo2-pcie-12/")
    page.fill("#id_reason", "fan noise, waiting for DC ops")
    page.get_by_role("button", name="⊘ Cordon").click()
    expect(page.locator("#cordon-why")).to_contain_text("fan noise, waiting for DC ops")
    page.fill("#id_label-key", "rack")
    page.fill("#id_label-value", "r12")
    page.fill("#id_label-reason", "moved after the fan swap")
    page.get_by_role("button", name="Set label").click()
    expect(page.locator("#node-panel")).to_contain_text("r12")
    page.fill("#id_taint-key", "gpu-fault")
    page.fill("#id_taint-value", "xid79")
    page.fill("#id_taint-reason", "GPU 3 fell off the bus")
    page.get_by_role("button", name="Add taint").click()
    expect(page.locator("#node-panel")).to_contain_text("xid79")
    page.reload()
    history = page.locator("#node-history")
    expect(history).to_contain_text("GPU 3 fell off the bus")
    expect(history).to_contain_text("cordoned")
    page.evaluate("window.scrollTo(0, 0)")
    shots(page, "node-panel-reasons")
    history.scroll_into_view_if_needed()
    shots(page, "node-history")


def test_screenshots_of_availability_charts_and_quota_bars(login, demo, shots, browser, browser_context_args):
    page = login("operator")
    for name, pool in (("pool-availability", "h100-prod"), ("pool-availability-mig", "a100-mig")):
        page.goto(f"{demo}/pools/{pool}/")
        chart = page.locator("section.availability")
        expect(chart.locator("svg")).to_be_visible()
        expect(chart).to_contain_text("gpu free")
        shots(chart, name)
    context = browser.new_context(**browser_context_args)
    tenant = login("acme", context.new_page())
    tenant.goto(f"{demo}/book/")
    quota = tenant.locator("section.quota")
    expect(quota).to_contain_text("Quota of acme")
    shots(tenant.locator("#book-body"), "book-quota")
    charts = tenant.locator("section.availability")
    expect(charts.locator("details[open] svg")).to_be_visible()
    charts.scroll_into_view_if_needed()
    shots(charts, "book-availability")
    context.close()


def test_screenshot_of_the_webhooks_page(login, demo, shots, monkeypatch):
    """The operator subscribes a receiver on loopback, sends a test event, and books: the log fills."""
    import http.server
    import threading

    from webhooks.deliver import run_once

    monkeypatch.setenv("BERTH_WEBHOOKS_ALLOW_PRIVATE", "1")
    answers = [500]

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(answers.pop(0) if answers else 204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page = login("operator")
        page.goto(f"{demo}/webhooks/")
        page.fill("#id_url", f"http://127.0.0.1:{server.server_address[1]}/berth")
        for event in ("reservation.placed", "reservation.preempted", "reservation.released", "node.cordoned"):
            page.check(f"input[value='{event}']")
        page.fill("#id_description", "job launcher")
        page.get_by_role("button", name="Create webhook").click()
        expect(page.locator("#new-secret")).to_contain_text("whsec_")
        page.get_by_role("button", name="Send a test event").click()
        run_once()  # the receiver answers 500 first: the try waits its backoff
        page.get_by_role("button", name="Send a test event").click()
        run_once()
        page.goto(f"{demo}/webhooks/")
        expect(page.locator("table.deliveries")).to_contain_text("✓ delivered")
        expect(page.locator("table.deliveries")).to_contain_text("next try")
        shots(page, "webhooks")
    finally:
        server.shutdown()
        server.server_close()


def test_screenshot_of_the_usage_report(login, demo, shots):
    """The operator reads two weeks of GPU-hours booked per tenant and pool."""
    page = login("operator")
    page.goto(f"{demo}/usage/?groupBy=tenant&groupBy=pool&bucket=day")
    expect(page.locator("#usage-chart h2")).to_contain_text("GPU-hours booked")
    shots(page, "usage")
