"""Draining a node from its page, the node's draining/drained state, what maintenance or a NoExecute
taint would move, and the Repaired / RepairPending notes a tenant reads on its reservations."""

import dataclasses
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django.utils.html import escape

from capacity import services
from capacity.conf import placer_config
from capacity.models import Reservation
from capacity.views.nodes import affected_text
from inventory.models import Node, NodeTaint

from web_helpers import HX, error_next_to, is_full_page

CONFIG = dataclasses.replace(placer_config(), random=None)  # the fullest node that fits, ties on name


def reserve(tenant="acme", gpus=2, start_in=timedelta(0), **extra):
    """Book a day through the services: starting now (running) or `start_in` from now (upcoming)."""
    data = {"tenantId": tenant, "poolId": "lab-pool", "devices": [{"class": "gpu", "count": gpus}], **extra}
    if start_in:
        start = timezone.now() + start_in
        data["during"] = {"start": start.isoformat(), "end": (start + timedelta(days=1)).isoformat()}
    else:
        data["duration"] = "1d"
    reservation = services.reserve(data, config=CONFIG).reservation
    assert reservation.status == "placed", reservation.conditions
    return reservation


def nodes_of(reservation) -> set[str]:
    return {a.node.name for a in reservation.allocations.filter(released_at__isnull=True)}


def utc(moment) -> str:
    return f"{moment:%b %d %H:%M} UTC"


def ends(reservation) -> str:
    return utc(reservation.allocations.get(released_at__isnull=True).ends_at)


@pytest.fixture
def running_and_later(two_hosts):
    """On node-a: one booking running for a day, one starting tomorrow."""
    running = reserve(gpus=2)
    later = reserve(gpus=2, start_in=timedelta(days=1))
    assert nodes_of(running) == nodes_of(later) == {"node-a"}
    return running, later


# --- the drain action ------------------------------------------------------------------------------------


def test_an_operator_drains_a_node_and_reads_what_moved_and_until_when_work_runs(op, running_and_later):
    running, later = running_and_later
    response = op.post("/nodes/node-a/actions/drain/", {"drain-reason": "fan replacement"}, **HX)
    panel = response.text
    # htmx gets the page below the navigation: the grid and the timeline change as well as the panel.
    assert panel.lstrip().startswith('<div id="node-page">') and not is_full_page(panel)
    assert "HX-Request" in response["Vary"]
    assert f"reservation {running.pk} (acme)" in panel and f"reservation {later.pk} (acme)" not in panel
    result = re.search(r'<div class="drain-result".*?</div>', panel, re.S).group(0)
    assert f'Moved to other nodes: <a href="/reservations/{later.pk}/">#{later.pk}</a>' in result
    assert "Found no room" not in result
    assert f"the last at <strong>{ends(running)}</strong>" in result
    assert f'<a href="/reservations/{running.pk}/">#{running.pk}</a> until {ends(running)[:-4]}' in result
    node = Node.objects.get(name="node-a")
    assert (node.cordoned, node.drain_reason) == (True, "fan replacement")
    assert nodes_of(later) == {"node-b"} and nodes_of(running) == {"node-a"}
    assert 'id="drain-form"' not in panel  # draining already: uncordon ends it


def test_without_javascript_the_drain_answers_with_the_whole_page_and_its_result(op, running_and_later):
    response = op.post("/nodes/node-a/actions/drain/")
    assert response.status_code == 200 and is_full_page(response.text)
    assert 'id="drain-result"' in response.text
    assert Node.objects.get(name="node-a").drain_started_at is not None


def test_a_booking_that_finds_no_room_stays_and_the_result_says_so(op, make_node, tenant):
    make_node("node-a", gpus=2)
    later = reserve(gpus=2, start_in=timedelta(days=1))
    panel = op.post("/nodes/node-a/actions/drain/", **HX).text
    waiting = re.search(r'<li class="waiting">.*?</li>', panel, re.S).group(0)
    assert "Found no room, stay here until room frees (RepairPending)" in waiting
    assert f'<a href="/reservations/{later.pk}/">#{later.pk}</a>' in waiting
    assert "Nothing runs here: the node is drained." in panel
    assert nodes_of(later) == {"node-a"}


def test_a_reason_over_200_characters_is_refused_next_to_the_field(op, two_hosts):
    panel = op.post("/nodes/node-a/actions/drain/", {"drain-reason": "x" * 201}, **HX).text
    assert "at most 200 characters" in error_next_to(panel, "drain-reason")
    assert f'value="{"x" * 201}"' in panel  # kept for correcting
    node = Node.objects.get(name="node-a")
    assert (node.cordoned, node.drain_started_at) == (False, None)


def test_a_reason_with_control_characters_is_refused_next_to_the_field(op, two_hosts):
    panel = op.post("/nodes/node-a/actions/drain/", {"drain-reason": "bad\x07fan"}, **HX).text
    assert error_next_to(panel, "drain-reason") == "reason must be text of at most 200 characters"
    assert not Node.objects.get(name="node-a").cordoned


def test_tenants_may_not_drain_and_anonymous_users_sign_in_first(alice, two_hosts):
    assert alice.post("/nodes/node-a/actions/drain/", {"drain-reason": "mine"}).status_code == 403
    assert alice.post("/nodes/node-a/actions/drain/", **HX).status_code == 403
    response = Client().post("/nodes/node-a/actions/drain/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert Node.objects.get(name="node-a").drain_started_at is None
    assert "/actions/drain/" not in alice.get("/nodes/node-a/").text


def test_draining_an_unknown_node_is_not_found_and_a_get_is_refused(op, two_hosts):
    assert op.post("/nodes/node-z/actions/drain/").status_code == 404
    assert op.get("/nodes/node-a/actions/drain/").status_code == 405
    assert Node.objects.get(name="node-a").drain_started_at is None


def test_the_drain_form_carries_the_csrf_token_and_posts_to_the_drain_action(op, two_hosts):
    html = op.get("/nodes/node-a/").text
    form = re.search(r'<form id="drain-form".*?</form>', html, re.S).group(0)
    assert 'action="/nodes/node-a/actions/drain/"' in form
    assert 'hx-post="/nodes/node-a/actions/drain/"' in form
    assert "csrfmiddlewaretoken" in form
    # No maxlength: a browser would cut a longer paste at it silently; the server says why instead.
    assert 'name="drain-reason"' in form and "maxlength" not in form
    refused = op.post("/nodes/node-a/actions/drain/", {"drain-reason": "x" * 10_000}, **HX).text
    assert error_next_to(refused, "drain-reason") == "reason must be text of at most 200 characters"
    assert Node.objects.get(name="node-a").drain_started_at is None


# --- draining / drained -----------------------------------------------------------------------------------


def test_a_draining_node_says_until_when_and_why_on_its_page_and_its_pool_row(op, running_and_later):
    running, _later = running_and_later
    op.post("/nodes/node-a/actions/drain/", {"drain-reason": "fan replacement"})
    html = op.get("/nodes/node-a/").text
    assert f"⇣ draining until {ends(running)}" in html  # the state badge
    state = re.search(r'<p class="drain-state".*?</p>', html, re.S).group(0)
    assert f"Draining until {ends(running)}" in state
    assert "Reason: <q>fan replacement</q>" in state
    assert "uncordon ends the drain" in state
    assert f"⇣ draining until {ends(running)}" in op.get("/pools/lab-pool/").text


def test_a_drained_node_says_drained_once_nothing_runs_there(op, running_and_later):
    running, _later = running_and_later
    op.post("/nodes/node-a/actions/drain/")
    services.release(running.pk)
    html = op.get("/nodes/node-a/").text
    assert "⇣ drained" in html and "draining until" not in html
    assert "<strong>Drained</strong>: nothing runs here" in html


def test_uncordon_ends_the_drain(op, running_and_later):
    op.post("/nodes/node-a/actions/drain/", {"drain-reason": "fan replacement"})
    panel = op.post("/nodes/node-a/actions/uncordon/", **HX).text
    assert "draining" not in panel and 'id="drain-state"' not in panel
    assert 'id="drain-form"' in panel
    node = Node.objects.get(name="node-a")
    assert (node.cordoned, node.drain_started_at, node.drain_reason) == (False, None, "")


def test_a_tenant_reads_that_the_node_drains_but_not_the_operators_reason(alice, op, running_and_later):
    running, _later = running_and_later
    op.post("/nodes/node-a/actions/drain/", {"drain-reason": "acme broke the fan"})
    html = alice.get("/nodes/node-a/").text
    assert f"Draining until {ends(running)}" in html
    assert "broke the fan" not in html
    assert "uncordon" not in html


# --- what maintenance or a NoExecute taint would move -------------------------------------------------------


def test_maintenance_and_a_noexecute_taint_say_how_many_reservations_they_would_move(op, running_and_later):
    reserve(gpus=1, start_in=timedelta(days=2))
    html = op.get("/nodes/node-a/").text
    maintenance = re.search(r'<p class="note impact" id="maintenance-impact">.*?</p>', html, re.S).group(0)
    assert "1 running and 2 upcoming reservations are on this node" in maintenance
    assert "bookings on a node in maintenance are moved now (BookingRepair)" in maintenance
    assert "drain first to let running work finish" in maintenance
    assert 'href="#drain-form"' in maintenance and "Drain…" in maintenance
    taint = re.search(r'<p class="note impact small" id="taint-impact">.*?</p>', html, re.S).group(0)
    assert "A NoExecute taint moves the bookings on this node now" in taint
    assert "1 running and 2 upcoming reservations are on this node" in taint
    assert 'href="#drain-form"' in taint


def test_the_warning_does_not_block_maintenance(op, running_and_later):
    op.post("/nodes/node-a/actions/maintenance-on/", **HX)
    assert Node.objects.get(name="node-a").maintenance


def test_a_draining_node_warns_without_offering_a_second_drain(op, running_and_later):
    op.post("/nodes/node-a/actions/drain/")
    maintenance = re.search(r'id="maintenance-impact">(.*?)</p>', op.get("/nodes/node-a/").text, re.S)[1]
    assert maintenance.startswith("1 running reservation is on this node")
    assert "drain first" not in maintenance and "#drain-form" not in maintenance


def test_an_empty_node_and_tenants_get_no_counts(op, alice, two_hosts):
    html = op.get("/nodes/node-a/").text
    assert "maintenance-impact" not in html and "taint-impact" not in html
    reserve(gpus=1)
    assert "maintenance-impact" not in alice.get("/nodes/node-a/").text


@pytest.mark.parametrize(
    ("running", "later", "text"),
    [
        (1, 0, "1 running reservation is on this node"),
        (0, 1, "1 upcoming reservation is on this node"),
        (0, 3, "3 upcoming reservations are on this node"),
        (2, 3, "2 running and 3 upcoming reservations are on this node"),
        (2, 1, "2 running and 1 upcoming reservation are on this node"),
    ],
)
def test_the_counts_read_as_a_sentence(running, later, text):
    assert affected_text(running, later) == text


# --- Repaired and RepairPending on the reservation pages ---------------------------------------------------


def row(html: str, pk: int) -> str:
    return re.search(rf'<tr id="reservation-{pk}".*?</tr>', html, re.S).group(0)


def test_a_tenant_reads_why_its_booking_moved_in_the_list_and_on_its_page(alice, op, running_and_later):
    _running, later = running_and_later
    op.post("/nodes/node-a/actions/drain/")
    message = Reservation.objects.get(pk=later.pk).condition("Repaired")["message"]
    # GPUs by their index on the node, not their UUIDs.
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\dZ: moved from node-a \(GPU 0, 1\)", message)
    assert message.endswith(" to node-b (GPU 0, 1): node-a is draining")
    listed = row(alice.get("/reservations/").text, later.pk)
    assert f'<span class="muted">Repaired:</span> {escape(message)}' in listed
    assert "⇄ moved" in listed
    detail = alice.get(f"/reservations/{later.pk}/").text
    assert f'<span class="muted">Repaired:</span> <code>{escape(message)}</code>' in detail
    assert '<a href="/nodes/node-b/"><strong>node-b</strong></a>' in detail
    # Where it was is history, not a place it holds.
    assert '<a href="/nodes/node-a/"><strong>node-a</strong></a>' not in detail
    assert re.search(r'Moved off <a href="/nodes/node-a/">node-a</a> at \w{3} \d\d \d\d:\d\d UTC', detail)
    assert '<a href="/nodes/node-a/">node-a</a>' not in listed


def test_a_tenant_reads_why_its_booking_waits_for_room(alice, op, make_node, tenant):
    make_node("node-a", gpus=2)
    later = reserve(gpus=2, start_in=timedelta(days=1))
    op.post("/nodes/node-a/actions/drain/")
    message = Reservation.objects.get(pk=later.pk).condition("RepairPending")["message"]
    assert message.startswith("node-a is draining: kept on node-a (GPU 0, 1) until room")
    listed = row(alice.get("/reservations/").text, later.pk)
    assert f'<span class="muted">RepairPending:</span> {escape(message)}' in listed
    assert "◷ repair pending" in listed and "✓ placed" in listed
    detail = alice.get(f"/reservations/{later.pk}/").text
    assert f'<span class="muted">RepairPending:</span> <code>{escape(message)}</code>' in detail


def test_a_repair_note_never_names_another_tenants_dedication_to_a_tenant(alice, op, make_node, tenant):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    NodeTaint.objects.create(node=Node.objects.get(name="node-b"), key="dedicated", value="globex")
    later = reserve(gpus=2, start_in=timedelta(days=1))
    op.post("/nodes/node-a/actions/drain/")
    message = Reservation.objects.get(pk=later.pk).condition("RepairPending")["message"]
    assert "dedicated=globex" in message  # stored exact; operators read it whole
    assert "dedicated=globex" in row(op.get("/reservations/").text, later.pk)
    for html in (alice.get("/reservations/").text, alice.get(f"/reservations/{later.pk}/").text):
        assert "globex" not in html
        assert "dedicated to another tenant" in html


def test_outside_a_test_transaction_the_drain_still_names_the_bookings_it_moved(
    transactional_db, op, running_and_later
):
    _running, later = running_and_later
    panel = op.post("/nodes/node-a/actions/drain/", **HX).text
    assert nodes_of(later) == {"node-b"}
    assert Reservation.objects.get(pk=later.pk).condition("Repaired")["reason"] == "Drained"
    assert f'Moved to other nodes: <a href="/reservations/{later.pk}/">#{later.pk}</a>' in panel


def test_the_drain_banner_says_who_drained_the_node_and_when_and_the_history_keeps_it(
    op, alice, running_and_later
):
    op.post("/nodes/node-a/actions/drain/", {"drain-reason": "fan replacement"})
    node = Node.objects.get(name="node-a")
    html = op.get("/nodes/node-a/").text
    state = re.search(r'<p class="drain-state".*?</p>', html, re.S).group(0)
    assert f"Since {node.drain_started_at:%b %d %H:%M} UTC, by olga;" in state
    history = re.search(r'<section class="card" id="node-history".*?</section>', html, re.S).group(0)
    assert re.search(r"<td>olga</td><td>drain started</td><td>fan replacement</td>", history)
    # A tenant reads neither who nor why.
    assert "olga" not in alice.get("/nodes/node-a/").text


@pytest.mark.django_db(transaction=True)
def test_maintenance_answers_the_whole_page_and_says_what_it_moved_as_a_drain_does(op, running_and_later):
    """node-a: one booking running, one tomorrow; node-b has room for both. Maintenance moves both.

    Transactional, as a request is: BookingRepair moves the work as the action commits.
    """
    running, later = running_and_later
    response = op.post("/nodes/node-a/actions/maintenance-on/", {"cordon-reason": "BIOS update"}, **HX)
    page = response.text
    assert page.lstrip().startswith('<div id="node-page">') and not is_full_page(page)
    result = re.search(r'<div class="drain-result" id="moves-result".*?</div>', page, re.S).group(0)
    moved = sorted((running.pk, later.pk))
    links = ", ".join(f'<a href="/reservations/{pk}/">#{pk}</a>' for pk in moved)
    assert f"Moved to other nodes: {links}" in result and "Found no room" not in result
    assert nodes_of(running) == nodes_of(later) == {"node-b"}
    # The header and the timeline follow: nothing of the two is drawn on node-a any more.
    assert re.search(r'<span class="muted node-state">[^<]*maintenance', page)
    assert f"reservation {later.pk} (acme)" not in page
    # Ending maintenance moves nothing back: no summary, and the header reads the node's state again.
    again = op.post("/nodes/node-a/actions/maintenance-off/", **HX).text
    assert 'id="moves-result"' not in again and "Start maintenance" in again


def test_a_drain_past_the_requests_bound_leaves_the_rest_to_the_worker_and_says_so(
    op, two_hosts, monkeypatch
):
    """node-a: two bookings tomorrow; with the request's bound at one, the drain moves one itself."""
    import maintenance.drain as draining

    later = [reserve(gpus=2, start_in=timedelta(days=1)) for _ in range(2)]
    assert all(nodes_of(r) == {"node-a"} for r in later)
    monkeypatch.setattr(draining, "REQUEST_MOVE_LIMIT", 1)
    page = op.post("/nodes/node-a/actions/drain/", {"drain-reason": "rack move"}, **HX).text
    result = re.search(r'<div class="drain-result" id="drain-result".*?</div>', page, re.S).group(0)
    assert "1 more reservation is being moved by the worker (<code>run_placer</code>)" in result
    assert sorted(len(nodes_of(r) & {"node-b"}) for r in later) == [0, 1]
