"""Pool and node pages: a node a whole-node lease holds is one block; spot work is drawn apart."""

import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from capacity import services


def lease(tenant="acme", **extra):
    data = {"tenantId": tenant, "poolId": "lab-pool", "binding": "node", **extra}
    if "during" not in data:
        data["duration"] = "1d"
    reservation = services.reserve(data).reservation
    assert reservation.status == "placed"
    return reservation


def node_of(reservation) -> str:
    return reservation.allocations.get().node.name


def row(html: str, node: str) -> str:
    found = re.search(rf'<tr id="row-{node}".*?</tr>', html, re.S)
    assert found, f"no row for {node}"
    return found.group(0)


def cells(html: str) -> list[str]:
    return re.findall(r'class="gpu s-(\w+)', html)


def until(reservation) -> str:
    return f"{reservation.ends_at:%b %d %H:%M} UTC"


def test_a_node_a_lease_holds_now_is_one_block_on_the_pool_page(op, three_hosts_with_scalars):
    leased = lease("acme")
    node = node_of(leased)
    html = row(op.get("/pools/lab-pool/").text, node)
    assert cells(html) == []  # no GPU cells: one block for the whole node
    block = re.search(
        r'<span class="lease-block" style="--cells: 4" title="([^"]*)">(.*?)</span>$', html, re.M
    )
    assert block, html
    assert block.group(1) == f"whole-node lease: every device of the node, until {until(leased)}"
    assert f'<a href="/reservations/{leased.pk}/">leased by acme until {until(leased)}</a>' in block.group(2)
    assert '<span class="free-count" title="GPUs bookable now / all GPUs">0/4</span>' in html
    # The other nodes keep their cells.
    other = next(n for n in ("node-a", "node-b", "node-c") if n != node)
    assert cells(row(op.get("/pools/lab-pool/").text, other)) == ["free"] * 4


def test_a_tenant_reads_another_tenants_lease_as_another_tenant(alice, three_hosts_with_scalars):
    leased = lease("globex")
    html = alice.get("/pools/lab-pool/").text
    block = row(html, node_of(leased))
    assert f"leased by another tenant until {until(leased)}" in block
    assert "/reservations/" not in block  # not theirs to open
    assert "globex" not in html


def test_a_tenant_reads_its_own_lease_with_its_name_and_link(alice, three_hosts_with_scalars):
    leased = lease("acme")
    block = row(alice.get("/pools/lab-pool/").text, node_of(leased))
    assert f'<a href="/reservations/{leased.pk}/">leased by acme until {until(leased)}</a>' in block


def test_a_lease_later_this_week_leaves_the_node_drawn_as_cells_booked_later(op, three_hosts_with_scalars):
    start = timezone.now() + timedelta(days=2)
    leased = lease(
        "acme", during={"start": start.isoformat(), "end": (start + timedelta(days=1)).isoformat()}
    )
    html = row(op.get("/pools/lab-pool/").text, node_of(leased))
    assert "lease-block" not in html
    assert cells(html) == ["later"] * 4
    assert "(whole-node lease)" in html  # each cell's title says what books it


def test_a_spot_lease_is_a_spot_block(op, three_hosts_with_scalars):
    leased = lease("acme", priority="spot")
    html = row(op.get("/pools/lab-pool/").text, node_of(leased))
    assert '<span class="lease-block spot"' in html and "· spot</span>" in html
    assert "spot whole-node lease" in html


def test_spot_bookings_are_drawn_apart_from_regular_ones_with_a_legend_entry(
    op, three_hosts_with_scalars, book
):
    spot = book("acme", gpus=1, priority="spot")
    regular = book("acme", gpus=1)
    assert node_of(spot) == node_of(regular) == "node-a"  # the fullest that fits, ties on name
    html = op.get("/pools/lab-pool/").text
    states = re.findall(r'<span class="gpu s-(\w+)( spot)?', row(html, "node-a"))
    assert states == [("now", " spot"), ("now", ""), ("free", ""), ("free", "")]
    assert "GPU0 · booked now, spot" in row(html, "node-a")
    legend = re.search(r'<ul class="legend" aria-label="GPU cells">.*?</ul>', html, re.S).group(0)
    assert '<span class="gpu mini s-now spot" aria-hidden="true"></span>spot work' in legend
    assert '<span class="lease-block mini" aria-hidden="true">▣</span>whole node leased now' in legend


def test_the_node_page_draws_a_lease_as_one_block_and_one_timeline_bar(op, three_hosts_with_scalars):
    leased = lease("acme")
    node = node_of(leased)
    html = op.get(f"/nodes/{node}/").text
    summary = re.search(r'<div class="node-summary">(.*?)</div>\s*</div>', html, re.S).group(1)
    assert '<span class="lease-block big" style="--cells: 4"' in summary
    assert f"leased by acme until {until(leased)}" in summary
    assert 'class="gpu ' not in summary
    lanes = re.findall(r'<div class="tl-lane([^"]*)">\s*<span class="tl-label"[^>]*>([^<]*)</span>', html)
    assert lanes[0] == (" tl-node", "Whole node")
    assert [label for _, label in lanes[1:]] == ["GPU0", "GPU1", "GPU2", "GPU3"]
    node_lane = html.split('<div class="tl-lane tl-node">')[1].split('<div class="tl-lane">')[0]
    assert node_lane.count('class="tl-bar ') == 1
    assert f"▣ #{leased.pk} acme lease</span>" in node_lane
    # Each device shows only a plain band where the lease holds it, with no text of its own.
    assert len(re.findall(r'<span class="tl-bar tl-now tl-held"[^>]*></span>', html)) == 4


def test_the_node_page_names_no_other_tenant_in_its_lease(alice, three_hosts_with_scalars):
    leased = lease("globex")
    html = alice.get(f"/nodes/{node_of(leased)}/").text
    assert "▣ leased by another tenant</span>" in html
    assert f"leased by another tenant until {until(leased)}" in html
    assert "globex" not in html


def test_the_node_page_draws_spot_bookings_apart(op, three_hosts_with_scalars, book):
    book("acme", gpus=1, priority="spot")
    book("acme", gpus=1)
    html = op.get("/nodes/node-a/").text
    bars = re.findall(r'<span class="tl-bar tl-now( tl-spot)?"', html)
    assert sorted(bars) == ["", " tl-spot"]
    assert '<span class="gpu s-now spot"' in html


def _queries(client, url):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured)


@pytest.mark.parametrize("who", ["op", "alice"])
def test_leases_and_spot_work_add_no_queries_to_the_pool_and_node_pages(
    request, three_hosts_with_scalars, book, who
):
    client = request.getfixturevalue(who)
    # The first view builds the pool index its availability chart reads (once per inventory change).
    _queries(client, "/pools/lab-pool/")
    # Drawn, not read from the cache, as the page is after the bookings.
    cache.key_prefix += "-again"  # not clear(): a Redis may be shared
    pool_before = _queries(client, "/pools/lab-pool/")
    node_before = _queries(client, "/nodes/node-b/")
    lease("acme")
    lease("globex", priority="spot")
    book("acme", gpus=1, priority="spot")
    # Drawn again whole (the node's topology and devices would be kept across bookings).
    cache.key_prefix += "-after"
    assert _queries(client, "/pools/lab-pool/") == pool_before
    assert _queries(client, "/nodes/node-b/") == node_before
