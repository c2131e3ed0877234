"""The node page's State panel and History kept in the cache: whatever reports, the worker or an
operator change there shows at once, and a kept read reads none of their rows.

Transactional where a write's visibility is the point, as a request's commit is.
"""

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from inventory import services as nodes
from inventory.models import Device, Node, NodeImageCache, NodeRefusal
from usage.models import UnbookedUse

NODE = "/nodes/node-a/"
pytestmark = pytest.mark.django_db(transaction=True)


def panel_of(html: str) -> str:
    start = html.index('<section id="node-panel"')
    return html[start : html.index("</section>", start)]


def history_of(html: str) -> str:
    start = html.index('<section class="card" id="node-history"')
    return html[start : html.index("</section>", start)]


def test_a_refusal_images_and_use_without_a_booking_show_at_once_on_a_kept_panel(two_hosts, op):
    node = Node.objects.get(name="node-a")
    op.get(NODE), op.get(NODE)  # kept
    NodeRefusal.objects.create(
        node=node, at=datetime(2026, 12, 1, 9, 30, tzinfo=UTC), code="INVALID_INPUT", message="bad xml here"
    )
    assert "bad xml here" in panel_of(op.get(NODE).text)
    NodeImageCache.objects.create(node=node, image="registry.example/train:7")
    assert "registry.example/train:7" in panel_of(op.get(NODE).text)
    device = Device.objects.filter(node=node).order_by("index").first()
    now = timezone.now()
    UnbookedUse.objects.create(
        device=device, node=node, since=now, seen_at=now, processes=2, message="2 processes, no booking"
    )
    assert "2 processes, no booking" in panel_of(op.get(NODE).text)
    UnbookedUse.objects.filter(device=device).update(message="3 processes, no booking")
    assert "3 processes, no booking" in panel_of(op.get(NODE).text)


def test_an_operators_change_shows_in_the_kept_history_at_once(two_hosts, op):
    op.get(NODE), op.get(NODE)
    nodes.set_label("node-a", "rack", "a07", reason="moved racks")
    assert "moved racks" in history_of(op.get(NODE).text)


def test_a_tenant_never_reads_the_operators_kept_panel(two_hosts, op, alice):
    op.get(NODE), op.get(NODE)
    html = alice.get(NODE).text
    assert 'id="node-history"' not in html
    assert "Cordon" not in panel_of(html)


def test_a_kept_operator_page_reads_none_of_the_panels_or_historys_rows(two_hosts, op):
    op.get(NODE), op.get(NODE)
    with CaptureQueriesContext(connection) as captured:
        assert op.get(NODE).status_code == 200
    statements = [q["sql"] for q in captured.captured_queries]
    # The ORM's reads of the panel (quoted names); the digest names the tables unquoted.
    for marker in ('"inventory_nodereport"', '"inventory_noderefusal"', '"inventory_nodeimagecache"',
                   '"capacity_unbookeduse"', '"inventory_historicalnode"', '"inventory_nodecondition"'):  # fmt: skip
        assert not any(marker in s for s in statements), marker
    assert (
        sum("berth_cache" in s for s in statements) <= 1
    )  # the parts, the panel and the history in one read


def test_a_booking_on_another_node_redraws_only_the_parts_that_read_the_pools_bookings(two_hosts, op, tenant):
    """
    node-a, node-b: 4 GPUs each in lab-pool. A booking fills one; the next lands on the other.
    """
    from capacity import services

    def book():
        ask = {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "devices": [{"class": "gpu", "count": 4}],
            "duration": "1d",
        }
        return services.reserve(ask).reservation

    busy = book().allocations.get().node.name  # its panel's counts now say what a drain would move
    page = f"/nodes/{busy}/"
    op.get(page), op.get(page)
    assert book().allocations.get().node.name != busy  # the other node: the pool's version moved
    with CaptureQueriesContext(connection) as captured:
        html = op.get(page).text
    statements = [q["sql"] for q in captured.captured_queries]
    # The head and the timeline read the pool's bookings again; the topology, the devices, the
    # panel and the history are kept: none of their reads.
    for marker in ('"inventory_devicelink"', '"inventory_noderefusal"', '"inventory_nodeimagecache"',
                   '"inventory_historicalnode"'):  # fmt: skip
        assert not any(marker in s for s in statements), marker
    assert 'id="node-panel"' in html and 'id="node-history"' in html
