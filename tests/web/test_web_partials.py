"""Each page answers htmx with its partial, the same URL without htmx with the whole page; both vary."""

import re

import pytest

from capacity.models import Reservation
from inventory.models import Node

from web_helpers import HX, is_full_page

REQUEST = {"tenant": "acme", "pool": "lab-pool", "count": "1", "device_class": "gpu", "duration": "1d"}


@pytest.fixture
def lab(make_node, tenant):
    return make_node("node-a", gpus=4, vcpu=64, memory=512)


def assert_varies(response):
    assert "HX-Request" in response["Vary"]


@pytest.mark.parametrize(
    ("url", "root"),
    [
        ("/pools/lab-pool/", '<section id="nodes"'),
        ("/nodes/node-a/", '<section id="node-panel"'),
        ("/preview/", '<div id="preview-body"'),
        ("/book/", '<div id="book-body"'),
        ("/reservations/", '<section id="reservation-list"'),
    ],
)
def test_a_get_answers_htmx_with_the_partial(op, lab, url, root):
    full = op.get(url)
    partial = op.get(url, **HX)
    assert full.status_code == partial.status_code == 200
    assert is_full_page(full.text) and root in full.text
    assert not is_full_page(partial.text)
    assert partial.text.lstrip().startswith(root)
    assert_varies(full)
    assert_varies(partial)


def test_a_history_restore_gets_the_whole_page(op, lab):
    response = op.get("/pools/lab-pool/", HTTP_HX_HISTORY_RESTORE_REQUEST="true", **HX)
    assert is_full_page(response.text)


def test_the_pools_page_varies_too(op, lab):
    assert_varies(op.get("/"))


def test_a_row_action_answers_htmx_with_the_row(op, lab):
    response = op.post("/nodes/node-a/row/cordon/", {"next": "/pools/lab-pool/"}, **HX)
    assert response.status_code == 200
    assert response.text.lstrip().startswith('<tr id="row-node-a" class="node-row blocked">')
    assert "cordoned" in response.text
    assert "/row/uncordon/" in response.text
    assert_varies(response)
    assert Node.objects.get(name="node-a").cordoned


def test_a_row_action_without_javascript_redirects_back(op, lab):
    response = op.post("/nodes/node-a/row/cordon/", {"next": "/pools/lab-pool/?state=cordoned"})
    assert response.status_code == 302 and response["Location"] == "/pools/lab-pool/?state=cordoned"
    response = op.post("/nodes/node-a/row/uncordon/", {"next": "https://evil.example/"})
    assert response["Location"] == "/pools/lab-pool/"
    assert not Node.objects.get(name="node-a").cordoned


def test_a_node_action_answers_htmx_with_the_whole_node_page(op, lab):
    """The header, the grid and the timeline change with the state: all of it is swapped, not the card."""
    response = op.post("/nodes/node-a/actions/maintenance-on/", **HX)
    assert response.text.lstrip().startswith('<div id="node-page"')
    assert '<section id="node-panel"' in response.text and 'id="node-timeline"' in response.text
    assert re.search(r'<span class="muted node-state">[^<]*maintenance', response.text)
    assert "End maintenance" in response.text and "<html" not in response.text
    assert_varies(response)
    assert Node.objects.get(name="node-a").maintenance


def test_a_node_action_without_javascript_redirects_to_the_node(op, lab):
    response = op.post("/nodes/node-a/actions/maintenance-on/")
    assert response.status_code == 302 and response["Location"] == "/nodes/node-a/"


def test_the_selector_check_answers_with_the_formatted_selector_or_the_error(op, lab):
    good = op.post("/preview/selector/", {"selector": "vramGiB>=80,gpuProduct in (H100-SXM5-80GB)"}, **HX)
    assert good.text.startswith('<span id="selector-check"')
    assert "vramGiB &gt;= 80, gpuProduct = H100-SXM5-80GB" in good.text
    bad = op.post("/preview/selector/", {"selector": "vramGiB >="}, **HX)
    assert 'class="selector-check bad"' in bad.text
    assert "selector" in bad.text
    assert_varies(bad)


def test_a_preview_post_answers_htmx_with_the_answer_in_place(op, lab):
    partial = op.post("/preview/", REQUEST, **HX)
    assert partial.text.lstrip().startswith('<div id="preview-body"')
    assert "Fits" in partial.text and "node-a" in partial.text
    full = op.post("/preview/", REQUEST)
    assert is_full_page(full.text) and "Fits" in full.text
    assert not Reservation.objects.exists()


def test_a_booking_answers_htmx_in_place_and_without_javascript_by_redirect(op, lab):
    partial = op.post("/book/", {**REQUEST, "idempotency_key": "web-a"}, **HX)
    assert partial.text.lstrip().startswith('<div id="book-body"')
    first = Reservation.objects.get()
    assert f"#{first.pk}" in partial.text and "placed" in partial.text
    full = op.post("/book/", {**REQUEST, "idempotency_key": "web-b"})
    second = Reservation.objects.exclude(pk=first.pk).get()
    assert full.status_code == 302 and full["Location"] == f"/reservations/{second.pk}/"


def test_a_release_answers_htmx_with_the_row(op, lab, book):
    reservation = book("acme")
    response = op.post(f"/reservations/{reservation.pk}/release/", **HX)
    assert response.text.lstrip().startswith(f'<tr id="reservation-{reservation.pk}"')
    assert "released" in response.text
    assert_varies(response)


def test_a_cordon_from_the_pool_page_takes_a_reason_into_the_nodes_history(op, lab):
    html = op.get("/pools/lab-pool/").text
    assert re.search(
        r'<input type="text" name="reason" class="row-reason"[^>]*aria-label="Why cordon node-a', html
    )
    op.post("/nodes/node-a/row/cordon/", {"reason": "PSU swap"}, **HX)
    from inventory.node_changelog import entries, node_history

    [cordon] = [e for e in entries(node_history(Node.objects.get(name="node-a"))) if e.action == "cordon"]
    assert cordon.reason == "PSU swap"
