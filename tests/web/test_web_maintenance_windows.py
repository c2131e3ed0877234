"""Maintenance windows on the pages: the node's timeline, the pool's chart and the admin (read-only)."""

from datetime import timedelta

from django.utils import timezone

from maintenance import windows as maintenance


def schedule_tomorrow(nodes=("node-a",), reason="firmware"):
    start = (timezone.now() + timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
    body = {
        "nodes": list(nodes),
        "start": start.isoformat(),
        "end": (start + timedelta(hours=12)).isoformat(),
    }
    return maintenance.schedule({**body, "reason": reason}).window


def test_the_node_timeline_draws_the_window_on_its_lane_and_across_the_devices(op, two_hosts):
    window = schedule_tomorrow()
    html = op.get("/nodes/node-a/").text
    assert '<span class="tl-label" title="">Maintenance</span>' in html
    assert f"window {window.pk}: firmware</span>" in html
    assert html.count('class="tl-window-band"') == 4  # one band per GPU lane
    assert "maintenance window: no new work" in html
    other = op.get("/nodes/node-b/").text
    assert "tl-window" not in other


def test_the_pool_chart_hatches_and_lists_the_window(op, two_hosts):
    window = schedule_tomorrow()
    html = op.get("/pools/lab-pool/").text
    assert f"maintenance window {window.pk} on node-a" in html
    assert 'g class="windows"' in html


def test_the_admin_shows_windows_and_changes_none(admin_client, two_hosts):
    window = schedule_tomorrow()
    listed = admin_client.get("/admin/capacity/maintenancewindow/")
    assert listed.status_code == 200 and "firmware" in listed.text
    page = admin_client.get(f"/admin/capacity/maintenancewindow/{window.pk}/change/")
    assert page.status_code == 200 and "node-a" in page.text
    assert admin_client.get("/admin/capacity/maintenancewindow/add/").status_code == 403
