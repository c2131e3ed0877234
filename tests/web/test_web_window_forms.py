"""Operators schedule and cancel maintenance windows from the node and pool pages (issue 57, item 4).

Errors show next to their field and write nothing; a tenant's post is a 403; each change is in the
audit with the operator's name and request id; a running booking the window takes is told.
"""

import re
from datetime import UTC, datetime, timedelta

import pytest

from capacity.models import MaintenanceWindow, Reservation
from trail.models import AuditRecord

from web_helpers import HX, error_next_to, is_full_page

NODE = "/nodes/node-a/"
POOL = "/pools/lab-pool/"


def typed(hours: float) -> str:
    """Return a time `hours` from now as a datetime-local input sends it (UTC, no zone)."""
    moment = (datetime.now(UTC) + timedelta(hours=hours)).replace(second=0, microsecond=0)
    return moment.strftime("%Y-%m-%dT%H:%M")


def form(start=24, end=36, reason="firmware", **extra) -> dict:
    start, end = (typed(t) if isinstance(t, int | float) else t for t in (start, end))
    fields = {"start": start, "end": end, "reason": reason, **extra}
    return {f"window-{k}": v for k, v in fields.items()}


def timeline_of(html: str) -> str:
    return re.search(r'<section class="card" id="node-timeline">.*?</section>', html, re.S).group(0)


def section_of(html: str) -> str:
    return re.search(r'<section id="maintenance-windows".*?</section>', html, re.S).group(0)


def test_an_operator_schedules_a_window_from_the_node_page_and_it_is_listed_and_audited(op, two_hosts):
    response = op.post("/nodes/node-a/maintenance/", form(move="on"))
    assert response.status_code == 302 and response["Location"] == "/nodes/node-a/#maintenance-windows"
    window = MaintenanceWindow.objects.get()
    assert (window.reason, window.move, window.created_by) == ("firmware", True, "olga")
    assert list(window.nodes.values_list("name", flat=True)) == ["node-a"]
    assert window.starts_at.strftime("%Y-%m-%dT%H:%M") == typed(24)  # typed as UTC
    listed = section_of(op.get(NODE).text)
    assert f'<tr id="window-{window.pk}">' in listed and "firmware" in listed and "✕ Cancel" in listed
    (row,) = AuditRecord.objects.filter(action="maintenance.schedule")
    assert (row.actor, row.object, row.after["nodes"], row.after["move"]) == (
        "olga",
        f"maintenance:{window.pk}",
        ["node-a"],
        True,
    )
    assert row.request_id  # the page's request


def test_htmx_gets_the_node_page_back_with_what_the_window_did(op, two_hosts, book):
    running = book("acme", gpus=2)
    response = op.post("/nodes/node-a/maintenance/", form(start=2, end=6), **HX)
    assert response.status_code == 200 and not is_full_page(response.text)
    assert "HX-Request" in response["Vary"]
    window = MaintenanceWindow.objects.get()
    result = re.search(r'<p class="note" id="window-result".*?</p>', response.text, re.S).group(0)
    assert f"Window {window.pk} scheduled" in result and "It overlaps 1 booking." in result
    assert f'href="/reservations/{running.pk}/"' in result  # told: its GPUs go at the start
    assert f"window {window.pk}: firmware" in timeline_of(response.text)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"end": 20}, "end", "end: the window must end after it starts"),
        ({"start": -3, "end": 2}, "start", "start: the window is in the past"),
        ({"reason": "x" * 201}, "reason", "reason must be text of at most 200 characters"),
        ({"start": "next tuesday"}, "start", "Enter a time such as 2026-12-08 00:00 (UTC)."),
        ({"end": ""}, "end", "This field is required."),
    ],
)
def test_a_bad_form_shows_the_error_next_to_its_field_and_writes_nothing(
    op, two_hosts, change, field, message
):
    for headers, status in (({}, 400), (HX, 200)):
        response = op.post("/nodes/node-a/maintenance/", form(**change), **headers)
        assert response.status_code == status
        assert message in error_next_to(response.text, f"window-{field}")
        assert is_full_page(response.text) == (not headers)
    assert not MaintenanceWindow.objects.exists()
    assert not AuditRecord.objects.filter(action__startswith="maintenance.").exists()


def test_the_pool_page_schedules_over_every_node_or_those_named_and_refuses_others(
    op, two_hosts, make_node, site
):
    from inventory.models import Pool

    make_node("elsewhere", gpus=2, pool=Pool.objects.create(slug="other-pool", name="Other", site=site))
    response = op.post("/pools/lab-pool/maintenance/", form(nodes="node-b, elsewhere"))
    assert response.status_code == 400
    assert error_next_to(response.text, "window-nodes") == "not in lab-pool: elsewhere"
    assert not MaintenanceWindow.objects.exists()
    response = op.post("/pools/lab-pool/maintenance/", form(nodes=""), **HX)
    assert response.status_code == 200 and not is_full_page(response.text)
    window = MaintenanceWindow.objects.get()
    assert window.pool.slug == "lab-pool" and window.nodes.count() == 2
    assert "the whole pool (2 nodes)" in section_of(response.text)
    # The chart is swapped out of band: the window is hatched there.
    assert '<div id="pool-chart" hx-swap-oob="true">' in response.text
    assert f"maintenance window {window.pk} on node-a, node-b" in response.text
    response = op.post("/pools/lab-pool/maintenance/", form(start=48, end=50, nodes="node-b"))
    assert response.status_code == 302
    assert list(MaintenanceWindow.objects.last().nodes.values_list("name", flat=True)) == ["node-b"]


def test_cancel_from_the_pool_page_deletes_tells_the_booking_and_is_audited(op, two_hosts, book):
    running = book("acme", gpus=2)
    op.post("/nodes/node-a/maintenance/", form(start=2, end=6))
    window = MaintenanceWindow.objects.get()
    running.refresh_from_db()
    assert running.condition("MaintenanceScheduled")["window"] == window.pk
    response = op.post(f"/pools/lab-pool/maintenance/{window.pk}/delete/", **HX)
    assert response.status_code == 200 and "No maintenance window scheduled." in response.text
    assert not MaintenanceWindow.objects.exists()
    running.refresh_from_db()
    assert running.condition("MaintenanceScheduled")["reason"] == "WindowCancelled"
    (row,) = AuditRecord.objects.filter(action="maintenance.delete")
    assert (row.actor, row.object, row.before["reason"]) == ("olga", f"maintenance:{window.pk}", "firmware")
    # Gone already: said where the list is, nothing else changes.
    again = op.post(f"/nodes/node-a/maintenance/{window.pk}/delete/")
    assert again.status_code == 404 and f"no maintenance window {window.pk}" in section_of(again.text)


def test_a_tenant_reads_the_windows_but_posting_is_403_and_writes_nothing(alice, op, two_hosts):
    op.post("/nodes/node-a/maintenance/", form())
    window = MaintenanceWindow.objects.get()
    for url in (NODE, POOL):
        listed = section_of(alice.get(url).text)
        assert f'<tr id="window-{window.pk}">' in listed
        assert "Cancel" not in listed and "Schedule window" not in listed
    for url in (
        "/nodes/node-a/maintenance/",
        "/pools/lab-pool/maintenance/",
        f"/nodes/node-a/maintenance/{window.pk}/delete/",
        f"/pools/lab-pool/maintenance/{window.pk}/delete/",
    ):
        assert alice.post(url, form(start=60, end=70)).status_code == 403
        assert alice.post(url, form(start=60, end=70), **HX).status_code == 403
    assert list(MaintenanceWindow.objects.values_list("pk", flat=True)) == [window.pk]
    assert AuditRecord.objects.filter(action__startswith="maintenance.").count() == 1


def test_the_running_booking_reads_the_window_on_its_page_and_in_the_api(op, alice, two_hosts, book):
    running = book("acme", gpus=2)
    op.post("/nodes/node-a/maintenance/", form(start=2, end=6, reason="PSU swap"))
    window = MaintenanceWindow.objects.get()
    page = alice.get(f"/reservations/{running.pk}/").text
    conditions = re.search(r'<table class="compact" id="conditions">.*?</table>', page, re.S).group(0)
    assert "<code>MaintenanceScheduled</code>" in conditions and "PSU swap" in conditions
    assert f"maintenance window {window.pk} on node-a" in conditions
    answer = alice.get(f"/api/v1/reservations/{running.pk}").json()
    assert answer["maintenance"] == {
        "windowId": window.pk,
        "start": window.starts_at.isoformat().replace("+00:00", "Z"),
        "end": window.ends_at.isoformat().replace("+00:00", "Z"),
        "reason": "PSU swap",
        "nodes": ["node-a"],
    }
    assert Reservation.objects.get(pk=running.pk).status == "placed"


@pytest.mark.django_db(transaction=True)
def test_the_kept_node_timeline_shows_a_window_scheduled_and_cancelled_from_the_page(two_hosts, op, alice):
    op.get(NODE), alice.get(NODE)  # both kept now
    op.post("/nodes/node-a/maintenance/", form(start=24, end=30, reason="psu swap"))
    window = MaintenanceWindow.objects.get()
    for reader in (op, alice):
        assert f"window {window.pk}: psu swap" in timeline_of(reader.get(NODE).text)
    op.post(f"/nodes/node-a/maintenance/{window.pk}/delete/")
    for reader in (op, alice):
        assert "psu swap" not in reader.get(NODE).text


@pytest.mark.django_db(transaction=True)
def test_the_kept_pool_page_lists_a_window_scheduled_elsewhere_and_drops_it_once_cancelled(
    two_hosts, op, alice
):
    op.get(POOL), alice.get(POOL)  # both kept now
    op.post("/nodes/node-b/maintenance/", form(start=24, end=30, reason="psu swap"))
    window = MaintenanceWindow.objects.get()
    for reader in (op, alice):
        html = reader.get(POOL).text
        assert f'<tr id="window-{window.pk}">' in section_of(html)
        assert f"maintenance window {window.pk} on node-b" in html  # the chart too
    op.post(f"/pools/lab-pool/maintenance/{window.pk}/delete/")
    for reader in (op, alice):
        html = reader.get(POOL).text
        assert "No maintenance window scheduled." in section_of(html) and "psu swap" not in html
