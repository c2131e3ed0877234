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


def _steer(pool: str, node: str) -> list[str]:
    """Return every other node of the pool: excluding them places a booking on `node`."""
    from inventory.models import Node

    return list(Node.objects.filter(pool__slug=pool).exclude(name=node).values_list("name", flat=True))


def _preempt(reservation, by):
    """Mark a released spot reservation preempted, as the preemption engine will (by: its reservation)."""
    from capacity import services
    from capacity.models import Reservation

    services.release(reservation.pk)
    reservation.refresh_from_db()
    moment = reservation.released_at
    reservation.status = Reservation.Status.PREEMPTED
    reservation.conditions = [
        {
            "type": "Preempted",
            "status": "True",
            "reason": "PreemptedByRegular",
            "message": f"preempted at {moment:%Y-%m-%dT%H:%MZ} by reservation {by.pk}",
            "reservationId": by.pk,
        }
    ]
    reservation.save(update_fields=["status", "conditions"])


def test_screenshots_of_leases_spot_work_and_preemption(login, demo, shots, browser, browser_context_args):
    from capacity import services

    def reserve(tenant, node, **extra):
        data = {"tenantId": tenant, "poolId": "pcie-batch", "duration": "2d", **extra}
        result = services.reserve({**data, "excludeNodes": _steer("pcie-batch", node)})
        assert result.reservation.status == "placed", result.reservation.conditions
        return result.reservation

    leased = reserve("acme", "sfo2-pcie-03", binding="node")
    reserve("globex", "sfo2-pcie-06", binding="node", priority="spot")
    reserve("globex", "sfo2-pcie-02", devices=[{"class": "gpu", "count": 3}], priority="spot")
    reserve("acme", "sfo2-pcie-04", devices=[{"class": "gpu", "count": 2}], priority="spot")
    gone = reserve("acme", "sfo2-pcie-07", devices=[{"class": "gpu", "count": 4}], priority="spot")
    _preempt(gone, by=leased)

    page = login("operator")
    page.goto(f"{demo}/pools/pcie-batch/")
    expect(page.locator("#row-sfo2-pcie-03 .lease-block")).to_contain_text("leased by acme until")
    expect(page.locator("#row-sfo2-pcie-06 .lease-block.spot")).to_be_visible()
    expect(page.locator("#row-sfo2-pcie-02 .gpu.spot").first).to_be_visible()
    shots(page, "pool-detail-lease-spot")
    page.goto(f"{demo}/nodes/sfo2-pcie-03/")
    expect(page.locator(".tl-node")).to_contain_text("Whole node")
    shots(page, "node-detail-lease")

    # A tenant in a browser of its own: the operator's session stays where it is.
    context = browser.new_context(**browser_context_args)
    tenant = login("acme", context.new_page())
    tenant.goto(f"{demo}/book/")
    tenant.select_option("#id_pool", "h100-prod")
    tenant.check("#id_binding_1")
    expect(tenant.locator("fieldset[data-binding=none]")).to_be_hidden()
    expect(tenant.locator("#id_nodes")).to_be_visible()
    tenant.fill("#id_duration", "3d")
    tenant.get_by_role("button", name="Book").click()
    result = tenant.locator("#booking-result")
    expect(result).to_contain_text("placed")
    expect(result).to_contain_text("the whole node, 8 devices")
    shots(tenant, "book-lease")
    tenant.goto(f"{demo}/reservations/")
    expect(tenant.locator("table.reservations")).to_contain_text("preempted at")
    shots(tenant, "reservations-preempted")
    context.close()


def test_screenshots_of_a_draining_node_and_a_repaired_reservation(
    login, demo, shots, browser, browser_context_args
):
    """Two bookings run on sfo2-pcie-08 for two days, two more start there later; the operator
    drains it from its page, and acme reads why its booking moved."""
    import dataclasses
    from datetime import timedelta

    from django.utils import timezone

    from capacity import services
    from capacity.conf import placer_config
    from capacity.models import Allocation, Reservation

    node = "sfo2-pcie-08"
    # No random top-N pick: later bookings land on the fullest node that fits, the one that runs these.
    config = dataclasses.replace(placer_config(), random=None)

    def reserve(tenant, gpus, **window):
        data = {"tenantId": tenant, "poolId": "pcie-batch", "devices": [{"class": "gpu", "count": gpus}]}
        result = services.reserve({**data, **window}, config=config)
        assert result.reservation.status == "placed", result.reservation.conditions
        return result.reservation

    def later(start_in, length):
        start = timezone.now() + start_in
        return {"during": {"start": start.isoformat(), "end": (start + length).isoformat()}}

    # Steered there by excludeNodes, which they keep: they could not move, but they run on.
    for tenant in ("acme", "globex"):
        reserve(tenant, 2, duration="2d", excludeNodes=_steer("pcie-batch", node))
    moved = reserve("acme", 4, **later(timedelta(days=1), timedelta(hours=8)))
    also = reserve("globex", 2, **later(timedelta(days=1, hours=12), timedelta(days=1)))
    assert {a.node.name for r in (moved, also) for a in r.allocations.all()} == {node}

    page = login("operator")
    page.goto(f"{demo}/nodes/{node}/")
    expect(page.locator("#maintenance-impact")).to_contain_text(
        "2 running and 2 upcoming reservations are on this node"
    )
    page.fill("#id_drain-reason", "fan replacement")
    page.get_by_role("button", name="⇣ Drain").click()
    expect(page.locator("#drain-result")).to_contain_text("Running until they end")
    # Both later bookings left the node. (The result's moved list is empty for now: BookingRepair,
    # run when the cordon commits, moves them before drain() looks; see tests/web/test_web_drain.py.)
    gone = Allocation.objects.filter(reservation__in=[moved, also], released_at__isnull=True)
    assert gone.exists() and not gone.filter(node__name=node).exists()
    expect(page.locator("#drain-state")).to_contain_text("Draining until")
    expect(page.locator("#drain-state")).to_contain_text("fan replacement")
    shots(page, "node-draining")

    assert Reservation.objects.get(pk=moved.pk).condition("Repaired")
    context = browser.new_context(**browser_context_args)
    tenant = login("acme", context.new_page())
    tenant.goto(f"{demo}/reservations/{moved.pk}/")
    result = tenant.locator("#booking-result")
    expect(result).to_contain_text("Repaired: ")
    expect(result).to_contain_text(f"{node} is draining")
    shots(tenant, "reservation-repaired")
    context.close()


def test_screenshots_of_a_node_in_february_filtered_reservations_and_a_reservation(login, demo, shots):
    """acme books sfo2-pcie-08 in February; the operator moves the node's timeline there, lists the
    node's reservations with the filters, and opens one that waited before it was placed."""
    import dataclasses
    from datetime import UTC, datetime

    from capacity import services
    from capacity.conf import placer_config

    node = "sfo2-pcie-08"
    config = dataclasses.replace(placer_config(), random=None)
    steer = _steer("pcie-batch", node)

    def reserve(gpus, start, end, tenant="acme"):
        window = {
            "start": datetime.fromisoformat(start).replace(tzinfo=UTC).isoformat(),
            "end": datetime.fromisoformat(end).replace(tzinfo=UTC).isoformat(),
        }
        data = {"tenantId": tenant, "poolId": "pcie-batch", "devices": [{"class": "gpu", "count": gpus}]}
        return services.reserve({**data, "during": window, "excludeNodes": steer}, config=config).reservation

    made = [
        reserve(4, "2027-02-01T08:00", "2027-02-03T20:00"),
        reserve(2, "2027-02-02T00:00", "2027-02-06T00:00", tenant="globex"),
        reserve(2, "2027-02-04T12:00", "2027-02-05T12:00"),
    ]
    assert all(r.status == "placed" for r in made)

    page = login("operator")
    page.goto(f"{demo}/nodes/{node}/")
    expect(page.locator("#upcoming")).to_contain_text("3 upcoming reservations")
    page.get_by_role("link", name="Feb 01 08:00 UTC").click()
    expect(page.locator("#node-timeline h2")).to_contain_text("Feb 01 – Feb 10")
    page.wait_for_url(f"{demo}/nodes/{node}/?from=2027-02-01")
    page.locator("#node-timeline").scroll_into_view_if_needed()
    shots(page, "node-detail-february")

    page.goto(f"{demo}/reservations/?node={node}&from=2027-02-01&to=2027-03-01")
    expect(page.locator("#reservation-list .count")).to_contain_text("Reservations 1–3 of 3")
    shots(page, "reservations-filtered")
    page.fill("#id_to", "2027-01-01")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#id_to-error")).to_have_text("must be after from")
    shots(page, "reservations-filter-error")

    # Six GPUs on the node from Feb 01 08:00 wait behind the first booking, and are placed once it goes.
    waited = reserve(6, "2027-02-01T08:00", "2027-02-02T08:00")
    assert waited.status == "pending"
    services.release(made[0].pk)
    services.retry_pending([waited.pool_id])
    page.goto(f"{demo}/reservations/{waited.pk}/")
    expect(page.locator("#booking-result")).to_contain_text("placed")
    expect(page.locator("#condition-history")).to_contain_text("Unschedulable")
    page.locator("#reservation-details").scroll_into_view_if_needed()
    shots(page, "reservation-detail")


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


def test_screenshot_of_a_node_its_agent_reported(login, demo, shots, tmp_path):
    """A new node in h100-prod, known only by name, is filled in by the reference agent's first report
    (8 × H100 from the agent fixtures, two cached images); the operator reads it on the node page."""
    import subprocess
    import sys

    from capacity.services.tokens import issue_node_token
    from inventory.models import Node, Pool

    sys.path.insert(0, str(Path(__file__).parents[1] / "agent"))
    from agent_helpers import FIXTURES, NodeAgent, fake_smi

    Node.objects.create(name="ams1-agent-01", pool=Pool.objects.get(slug="h100-prod"))
    token = tmp_path / "token"
    token.write_text(issue_node_token("ams1-agent-01").key)
    images = tmp_path / "images"
    images.mkdir()
    for name in ("nvcr.io_nvidia_pytorch_24.05-py3", "ghcr.io_acme_trainer_v2"):
        (images / name).write_text("")
    agent = NodeAgent("ams1-agent-01", demo, token, fake_smi(tmp_path, FIXTURES / "h100-8"), tmp_path / "out")
    ran = agent.once("--images-dir", str(images))
    assert ran.returncode == 0, ran.stderr
    assert isinstance(ran, subprocess.CompletedProcess)

    page = login("operator")
    page.goto(f"{demo}/nodes/ams1-agent-01/")
    expect(page.locator("#last-report")).to_contain_text("by node.ams1-agent-01")
    expect(page.locator("#image-cache")).to_contain_text("nvcr.io_nvidia_pytorch_24.05-py3")
    expect(page.locator("table.topo")).to_contain_text("NV18")
    shots(page, "node-detail-agent")


def test_screenshot_of_a_node_with_hardware_waiting_and_a_refused_report(login, demo, shots):
    """ams1-dgx-01's own credential reports a ninth GPU (unverified) and then tries to make a booked
    GPU a `cpu` (refused); the operator reads both on the node page and accepts the GPU in place."""
    from django.utils import timezone

    from capacity.models import DeviceBooking
    from inventory.ingest import IngestError, Reporter, apply_node_report
    from inventory.models import Device, Node

    node = Node.objects.get(name="ams1-dgx-01")
    by = Reporter.node_credential("node.ams1-dgx-01")
    gpus = [
        {"uuid": d.uuid, "class": d.device_class, "index": d.index, "healthy": d.healthy}
        for d in Device.objects.filter(node=node, parent=None).order_by("index")
    ]
    new = {"uuid": "GPU-0a9e5c1d-0000-4000-8000-000000000009", "class": "gpu", "index": 8, "healthy": True,
           "attributes": {"gpuProduct": "H100-SXM5-80GB", "vramGiB": 80}}  # fmt: skip
    apply_node_report(node, {"devices": [*gpus, new]}, by=by)
    booked = DeviceBooking.objects.filter(device__node=node, during__endswith__gt=timezone.now()).first()
    reshaped = [{**g, "class": "cpu"} if g["uuid"] == booked.device.uuid else g for g in gpus]
    with pytest.raises(IngestError):
        apply_node_report(node, {"devices": [*reshaped, new]}, by=by)

    page = login("operator")
    page.goto(f"{demo}/nodes/ams1-dgx-01/")
    expect(page.locator("#last-refusal")).to_contain_text("CONFLICT")
    expect(page.locator("#last-refusal")).to_contain_text("Drain the node first")
    expect(page.locator("#unverified-devices")).to_contain_text("1 new device waiting for an operator")
    expect(page.locator(".bookable-now")).to_contain_text("of 8 whole GPUs")
    shots(page, "node-detail-unverified")
    page.locator("#unverified-devices button").click()
    expect(page.locator("#unverified-devices")).to_have_count(0)
    expect(page.locator(".bookable-now")).to_contain_text("of 9 whole GPUs")


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


def test_screenshots_of_gpu_use_on_a_reservation_and_use_without_a_booking(login, demo, shots):
    """The demo's nodes reported GPU use: acme's training run over six hours (an hourly checkpoint
    dip), an idle booking marked Idle, and a free H100 running two processes no one booked."""
    from capacity.models import Reservation
    from usage.models import UnbookedUse

    training = Reservation.objects.get(idempotency_key="demo-now-1")
    page = login("operator")
    page.goto(f"{demo}/reservations/{training.pk}/")
    expect(page.locator("#usage")).to_contain_text("% mean")
    expect(page.locator("#usage-series polyline.use")).to_have_count(1)
    page.locator("#usage-series").scroll_into_view_if_needed()
    shots(page, "reservation-usage")

    page.goto(f"{demo}/reservations/?tenant=acme&status=placed")
    expect(page.locator(f"#reservation-{training.pk} td.usage")).to_contain_text("%")
    shots(page, "reservations-usage")

    stray = UnbookedUse.objects.select_related("node").get()
    page.goto(f"{demo}/nodes/{stray.node.name}/")
    expect(page.locator("#unbooked-use")).to_contain_text("2 processes, 41 GiB, since")
    shots(page, "node-unbooked-use")


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


def test_screenshot_of_a_pending_reservation_in_the_fair_queue(login, demo, shots):
    """h100-prod has shares (acme 96, globex 48). Its GPUs are all booked a month out; then globex
    and acme each ask for more there and wait: acme's page says where it stands in the fair queue."""
    import dataclasses
    from datetime import timedelta

    from django.utils import timezone

    from capacity import services
    from capacity.conf import placer_config

    config = dataclasses.replace(placer_config(), random=None)
    start = (timezone.now() + timedelta(days=30)).replace(minute=0, second=0, microsecond=0)
    window = {"start": start.isoformat(), "end": (start + timedelta(days=2)).isoformat()}

    def reserve(tenant, gpus):
        data = {"tenantId": tenant, "poolId": "h100-prod", "devices": [{"class": "gpu", "count": gpus}]}
        return services.reserve({**data, "during": window}, config=config).reservation

    # acme up to its guarantee of 96 GPUs, globex the rest (borrowing): past their guarantees,
    # what each asks next waits, as nothing either holds is another's to reclaim.
    for tenant in ["acme"] * 12 + ["globex"] * 14:  # quota: 128 GPUs at once each
        if reserve(tenant, 8).status == "pending":
            break
    theirs, mine, more = reserve("globex", 4), reserve("acme", 8), reserve("acme", 2)
    assert {r.status for r in (theirs, mine, more)} == {"pending"}
    place = services.queue_places([mine])[mine.pk]
    page = login("acme")
    page.goto(f"{demo}/reservations/{mine.pk}/")
    expect(page.locator("#queue-place")).to_contain_text(f"{place.position}")
    expect(page.locator("#queue-place")).to_contain_text("in h100-prod; your team used")
    shots(page, "reservation-queue")


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


def test_screenshots_of_a_borrowing_booking_and_a_preview_that_reclaims_it(
    login, demo, shots, browser, browser_context_args
):
    """h100-prod has shares (acme 96 lending 32, globex 48). A month out, acme books 88 GPUs and
    globex the rest, borrowing past its 48; acme's preview of 8 more, within its guarantee, fits by
    reclaiming one of globex's borrowing bookings. globex's page shows the borrowing badge."""
    import dataclasses
    from datetime import timedelta

    from django.utils import timezone

    from capacity import services
    from capacity.conf import placer_config

    config = dataclasses.replace(placer_config(), random=None)
    start = (timezone.now() + timedelta(days=31)).replace(minute=0, second=0, microsecond=0)
    window = {"start": start.isoformat(), "end": (start + timedelta(days=2)).isoformat()}

    def reserve(tenant, gpus):
        data = {"tenantId": tenant, "poolId": "h100-prod", "devices": [{"class": "gpu", "count": gpus}]}
        return services.reserve({**data, "during": window}, config=config).reservation

    for _ in range(11):
        assert reserve("acme", 8).status == "placed"
    borrowing = []
    for _ in range(16):  # quota: 128 GPUs at once
        r = reserve("globex", 8)
        if r.status != "placed":
            break
        r.refresh_from_db()
        if r.borrowed_gpus:
            borrowing.append(r)
    assert borrowing

    page = login("globex")
    page.goto(f"{demo}/reservations/{borrowing[-1].pk}/")
    expect(page.locator(".badge", has_text="borrowed")).to_be_visible()
    shots(page, "reservation-borrowed")

    # acme in a browser of its own.
    context = browser.new_context(**browser_context_args)
    page = login("acme", context.new_page())
    page.goto(f"{demo}/preview/")
    page.select_option("#id_pool", "h100-prod")
    page.fill("#id_count", "8")
    page.fill("#id_start", start.strftime("%Y-%m-%d %H:%M"))
    page.fill("#id_duration", "2d")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#preemptible")).to_contain_text("Fits by reclaiming 1 borrowed reservation")
    shots(page, "preview-reclaim")
    context.close()
