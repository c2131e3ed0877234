"""Screenshots of what nodes report: a node filled in by its agent, hardware waiting, a refused
report, and GPU use with and without a booking.

Screenshots at 1366×900 to BERTH_SCREENSHOTS (e.g. docs/screenshots), else a temp dir
(the `shots` fixture); the run also checks that every page renders in a real browser.
"""

from pathlib import Path

import pytest
from playwright.sync_api import expect

from chromium import CHROMIUM, SKIP_REASON

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason=SKIP_REASON)]


def test_screenshot_of_a_node_its_agent_reported(login, demo, shots, tmp_path):
    """A new node in h100-prod, known only by name, is filled in by the reference agent's first report
    (8 × H100 from the agent fixtures, two cached images); the operator reads it on the node page."""
    import subprocess
    import sys

    from identity.tokens import issue_node_token
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
