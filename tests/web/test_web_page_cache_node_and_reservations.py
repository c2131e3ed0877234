"""The node page's and the reservation list's kept parts: fresh after every write, per viewer, cheap.

Transactional where a write's visibility is the point: versions are bumped as a transaction
commits, as a request's does.
"""

import re
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from capacity import services
from capacity.models import Reservation
from capacity.views.page_cache import CSRF_PLACEHOLDER
from inventory.models import Device, DeviceSample, NodeCondition, NodeReport
from maintenance import windows

from web_helpers import HX, is_full_page

NODE = "/nodes/node-a/"
LIST = "/reservations/"
BOOKINGS_READ = '"capacity_devicebooking"."device_id" AS "device_id"'  # the grid's and timeline's read


def in_database() -> int:
    return int(settings.CACHES["default"]["BACKEND"].endswith("DatabaseCache"))


def head_of(html: str) -> str:
    return re.search(r'<div class="page-head">.*?</h1>', html, re.S).group(0)


def timeline_of(html: str) -> str:
    return re.search(r'<section class="card" id="node-timeline">.*?</section>', html, re.S).group(0)


def row_of(html: str, pk: int) -> str:
    found = re.search(rf'<tr id="reservation-{pk}" class="status-(\w+)">.*?</tr>', html, re.S)
    return found.group(0) if found else ""


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


# --- the node page --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_booking_and_its_release_show_on_the_node_page_at_once_to_the_writer_and_another_reader(
    two_hosts, book, alice, op
):
    alice.get(NODE), op.get(NODE)  # both kept now
    reservation = book("acme", gpus=2)
    mine = f"#{reservation.pk} acme"
    assert mine in timeline_of(alice.get(NODE).text)
    assert mine in timeline_of(op.get(NODE).text)
    assert "2 of 4 whole GPUs bookable now" in op.get(NODE).text
    services.release(reservation.pk)
    for reader in (alice, op):
        html = reader.get(NODE).text
        assert "4 of 4 whole GPUs bookable now" in html
        assert "No running or upcoming reservations on this node." in timeline_of(html)


@pytest.mark.django_db(transaction=True)
def test_a_cordon_shows_at_once_to_the_operator_who_cordoned_and_to_a_tenant(two_hosts, alice, op):
    alice.get(NODE), op.get(NODE)
    response = op.post("/nodes/node-a/actions/cordon/", {"cordon-reason": "fan"}, **HX)
    assert response.status_code == 200 and "cordoned" in head_of(response.text)
    assert "cordoned" in head_of(op.get(NODE).text)
    assert "cordoned" in head_of(alice.get(NODE).text)
    op.post("/nodes/node-a/actions/uncordon/", {"cordon-reason": ""})
    assert "cordoned" not in head_of(alice.get(NODE).text)


@pytest.mark.django_db(transaction=True)
def test_a_maintenance_window_shows_on_the_timeline_at_once_and_its_cancel_too(two_hosts, op):
    op.get(NODE)
    now = datetime.now(UTC)
    window = windows.schedule(
        {
            "nodes": ["node-a"],
            "start": ms(now + timedelta(days=1)),
            "end": ms(now + timedelta(days=2)),
            "reason": "psu swap",
        }
    ).window
    assert f"window {window.pk}: psu swap" in timeline_of(op.get(NODE).text)
    windows.cancel(window.pk)
    assert "psu swap" not in timeline_of(op.get(NODE).text)


@pytest.mark.django_db(transaction=True)
def test_what_reports_change_shows_at_once_on_the_kept_panel(two_hosts, op, alice):
    from inventory.models import Node

    node = Node.objects.get(name="node-a")
    op.get(NODE), alice.get(NODE)
    NodeReport.objects.create(node=node, at=datetime(2026, 11, 30, 8, 15, tzinfo=UTC), by="agent-node-a")
    NodeCondition.objects.create(node=node, type="DiskPressure", status="False", reason="PlentyLeft")
    html = op.get(NODE).text
    assert "Nov 30 08:15 UTC by <code>agent-node-a</code>" in html
    assert "PlentyLeft" in html and "PlentyLeft" in alice.get(NODE).text


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("first", ["globex", "acme", "operator"])
def test_no_one_reads_a_node_page_part_kept_for_another_viewer(two_hosts, book, alice, bob, op, first):
    reservation = book("acme", gpus=2)
    readers = {"acme": alice, "globex": bob, "operator": op}
    order = [first, *(t for t in readers if t != first)]
    pages = {who: timeline_of(readers[who].get(NODE).text) for who in order * 2}
    assert f"#{reservation.pk} acme" in pages["acme"]
    assert "booked" in pages["globex"] and "acme" not in pages["globex"]
    assert f"#{reservation.pk}" not in pages["globex"]
    assert "instance" in pages["operator"] or f"#{reservation.pk} acme" in pages["operator"]


@pytest.mark.django_db(transaction=True)
def test_each_reader_gets_its_own_csrf_token_on_a_kept_node_page(two_hosts, op, operators_group):
    from django.contrib.auth.models import User

    op.get(NODE)
    other = User.objects.create_user("oscar", password="pw-oscar-123")
    other.groups.add(operators_group)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(other)
    html = strict.get(NODE).text
    assert CSRF_PLACEHOLDER not in html
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    response = strict.post(
        "/nodes/node-a/actions/cordon/", {"csrfmiddlewaretoken": token, "cordon-reason": "x"}
    )
    assert response.status_code == 302
    assert "cordoned" in head_of(op.get(NODE).text)


def test_htmx_gets_the_kept_timeline_alone_and_the_page_whole(two_hosts, op):
    whole = op.get(NODE)
    moved = op.get(NODE + "?from=2026-01-05", HTTP_HX_TARGET="node-timeline", **HX)
    assert is_full_page(whole.text) and not is_full_page(moved.text)
    assert "{#" not in whole.text and "#}" not in whole.text  # no template comment shown as text
    assert moved.text.lstrip().startswith('<section class="card" id="node-timeline">')
    assert "Jan 05" in moved.text and "HX-Request" in moved["Vary"]
    again = op.get(NODE + "?from=2026-01-05", HTTP_HX_TARGET="node-timeline", **HX)
    assert again.text == moved.text
    panel = op.get(NODE, **HX).text
    assert panel.lstrip().startswith('<section id="node-panel"')
    assert is_full_page(op.get(NODE).text)


def test_a_kept_node_page_reads_one_version_statement_and_none_of_its_parts(two_hosts, book, alice):
    book("acme", gpus=1)
    alice.get(NODE)
    with CaptureQueriesContext(connection) as captured:
        assert alice.get(NODE).status_code == 200
    statements = [q["sql"] for q in captured.captured_queries]
    assert sum("capacity_poolbookingversion" in s for s in statements) == 1
    assert sum("berth_cache" in s for s in statements) == in_database()  # the four parts in one read
    for marker in (BOOKINGS_READ, '"inventory_devicelink"', "maintenancewindow", '"inventory_device"."uuid"'):
        assert not any(marker in s for s in statements), marker


def test_zero_seconds_draws_the_node_page_fresh(two_hosts, op, settings):
    op.get(NODE)
    settings.PAGE_CACHE_SECONDS = 0
    with CaptureQueriesContext(connection) as captured:
        html = op.get(NODE).text
    statements = [q["sql"] for q in captured.captured_queries]
    assert not any("berth_cache" in s or "capacity_poolbookingversion" in s for s in statements)
    assert any(BOOKINGS_READ in s for s in statements)
    assert CSRF_PLACEHOLDER not in html and 'name="csrfmiddlewaretoken"' in html


# --- the reservation list -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_booking_its_approval_and_its_release_show_in_the_list_at_once(two_hosts, book, alice, op):
    from policy.pool_policy import set_policy

    alice.get(LIST), op.get(LIST)
    set_policy("lab-pool", {"approval_above_gpu_hours": 100})
    held = book("acme", gpus=4, duration="2d")
    for reader in (alice, op):
        assert "status-placed" in row_of(reader.get(LIST).text, held.pk)
    assert op.post(f"/approvals/{held.pk}/deny/", {"reason": "over the grant"}).status_code == 302
    for reader in (op, alice):
        assert 'class="status-released"' in row_of(reader.get(LIST).text, held.pk)
    small = book("acme", gpus=1)
    assert small.pk != held.pk and "status-placed" in row_of(alice.get(LIST).text, small.pk)
    assert alice.post(f"/reservations/{small.pk}/release/").status_code == 302
    for reader in (alice, op):
        assert "status-released" in row_of(reader.get(LIST).text, small.pk)


@pytest.mark.django_db(transaction=True)
def test_a_status_change_without_a_booking_shows_at_once(two_hosts, book, alice, op):
    pending = book("acme", gpus=64)  # fits nowhere: pending, no booking
    assert pending.status == Reservation.Status.PENDING
    assert "status-pending" in row_of(alice.get(LIST).text, pending.pk)
    op.get(LIST)
    services.release(pending.pk)
    for reader in (alice, op):
        assert "status-released" in row_of(reader.get(LIST).text, pending.pk)


@pytest.mark.django_db(transaction=True)
def test_gpu_use_is_read_each_time_though_the_list_is_kept(two_hosts, book, alice):
    reservation = book("acme", gpus=1)
    alice.get(LIST)
    assert "%</span>" not in row_of(alice.get(LIST).text, reservation.pk)
    device = Device.objects.filter(bookings__allocation__reservation=reservation).first()
    minute = datetime.now(UTC).replace(second=0, microsecond=0)
    DeviceSample.objects.create(device=device, minute=minute, gpu_percent=77, processes=1)
    assert ">77.0 %</span>" in row_of(alice.get(LIST).text, reservation.pk)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("first", ["globex", "acme"])
def test_a_tenant_never_reads_a_list_kept_for_another(two_hosts, book, alice, bob, op, first):
    mine = book("acme", gpus=1)
    theirs = book("globex", gpus=1)
    readers = {"acme": alice, "globex": bob}
    order = [first, *(t for t in readers if t != first)]
    for _ in range(2):
        for tenant in order:
            html = readers[tenant].get(LIST).text
            own, other = (mine, theirs) if tenant == "acme" else (theirs, mine)
            assert row_of(html, own.pk) and not row_of(html, other.pk)
    html = op.get(LIST).text
    assert row_of(html, mine.pk) and row_of(html, theirs.pk)


def test_the_lists_htmx_partials_and_its_filters_are_kept_apart(two_hosts, book, op):
    reservation = book("acme", gpus=1)
    pager = op.get(LIST, HTTP_HX_TARGET="reservation-list", **HX)
    assert pager.text.lstrip().startswith('<section id="reservation-list">') and "HX-Request" in pager["Vary"]
    body = op.get(LIST + "?status=placed", HTTP_HX_TARGET="reservations-body", **HX).text
    assert body.lstrip().startswith('<div id="reservations-body">') and row_of(body, reservation.pk)
    assert not row_of(op.get(LIST + "?status=pending").text, reservation.pk)
    assert row_of(op.get(LIST + "?status=placed").text, reservation.pk)
    assert is_full_page(op.get(LIST).text)


def test_a_kept_list_reads_one_version_statement_and_not_its_rows(two_hosts, book, alice):
    book("acme", gpus=1)
    alice.get(LIST)
    with CaptureQueriesContext(connection) as captured:
        assert alice.get(LIST).status_code == 200
    statements = [q["sql"] for q in captured.captured_queries]
    assert sum("capacity_poolbookingversion" in s for s in statements) == 1
    assert sum("berth_cache" in s for s in statements) == in_database()
    # None of the list's own reads: the count and page of reservations, their allocations.
    assert not any('FROM "capacity_reservation_all"' in s for s in statements)


def test_zero_seconds_draws_the_list_fresh(two_hosts, book, alice, settings):
    book("acme", gpus=1)
    alice.get(LIST)
    settings.PAGE_CACHE_SECONDS = 0
    with CaptureQueriesContext(connection) as captured:
        assert alice.get(LIST).status_code == 200
    statements = [q["sql"] for q in captured.captured_queries]
    assert not any("berth_cache" in s or "capacity_poolbookingversion" in s for s in statements)
    assert any('FROM "capacity_reservation_all"' in s for s in statements)


def test_time_alone_ends_a_kept_timeline_at_the_next_start_or_end_it_draws(two_hosts, book, operator):
    from capacity.views.node_fragments import timeline

    devices = list(Device.objects.filter(node__name="node-a"))
    assert timeline(devices, operator, datetime.now(UTC))["changes_at"] is None
    reservation = book("acme", gpus=1, duration="3h")
    now = datetime.now(UTC)
    assert timeline(devices, operator, now)["changes_at"] == reservation.ends_at
    assert timeline(devices, operator, reservation.ends_at)["changes_at"] is None


@pytest.mark.django_db(transaction=True)
def test_concurrent_bookings_and_releases_of_one_pool_never_deadlock_on_the_versions(two_hosts):
    """A booking bumps the reservation version then the booking version, a release the reverse.

    Both are columns of one row per pool: two rows, locked at commit in those two orders,
    deadlocked (Postgres broke each deadlock after a second and the placer retried).
    """
    import threading

    from django.db import connections

    def deadlocks() -> int:
        with connection.cursor() as cur:
            cur.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
            return cur.fetchone()[0]

    before, errors = deadlocks(), []

    def work() -> None:
        try:
            for _ in range(10):
                reservation = services.reserve(
                    {
                        "tenantId": "acme",
                        "poolId": "lab-pool",
                        "devices": [{"class": "gpu", "count": 1}],
                        "duration": "1h",
                    }
                ).reservation
                services.release(reservation.pk)
        except Exception as err:
            errors.append(err)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(1)  # a closed backend's counts reach pg_stat_database as it exits
    assert errors == []
    assert deadlocks() == before
