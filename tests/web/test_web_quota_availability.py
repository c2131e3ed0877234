"""Tenants see their quota (held now, peak in the window, limit) and the next 14 days of free capacity.

Bookings here start at the real now: the pages read the real clock after commit.
"""

import re
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext

from capacity.models import Quota
from capacity.services import EVERYONE, Scope
from capacity.views.availability_chart import pool_charts
from inventory import services as nodes

from tenants import make_tenant
from web_helpers import HX


def quota_row(html: str, resource: str) -> list[str]:
    """Return the cells (now, peak, limit) of a resource's row in the quota card."""
    row = re.search(rf'<th scope="row">{re.escape(resource)}</th>(.*?)</tr>', html, re.S)
    assert row, f"no quota row for {resource}"
    return [
        re.sub(r"<[^>]+>", "", c).strip()
        for c in re.findall(r'<td class="num">(.*?)</td>', row.group(1), re.S)
    ]


def bar_titles(html: str, series: str) -> list[str]:
    """Return the hover titles of one series' bars in the first chart, in time order."""
    group = re.search(
        rf'<g class="series" role="group" aria-label="{re.escape(series)} per hour">(.*?)\n\s*</g>',
        html,
        re.S,
    )
    assert group, f"no series {series}"
    return re.findall(r"<g><title>(.*?)</title>", group.group(1))


def book_later(gpus, start_hours, end_hours, tenant="acme"):
    """Book `gpus` GPUs of lab-pool from `start_hours` to `end_hours` from the real now."""
    from capacity import services

    now = datetime.now(UTC)
    during = {
        "start": (now + timedelta(hours=start_hours)).isoformat(),
        "end": (now + timedelta(hours=end_hours)).isoformat(),
    }
    data = {
        "tenantId": tenant,
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": gpus}],
        "during": during,
    }
    return services.reserve(data).reservation


def test_the_booking_page_shows_the_tenants_quota_now_and_at_its_peak_in_the_forms_window(
    alice, make_node, tenant, book
):
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    Quota.objects.create(tenant=tenant, resource="gpu", limit=8)
    book("acme", gpus=2)
    book_later(3, 30, 40)
    html = alice.get("/book/").text
    assert "Quota of acme" in html
    # The form's default window is a day from now: the 3 GPUs on day two are not in it.
    assert quota_row(html, "gpu") == ["2", "2", "8"]
    assert 'aria-label="gpu: 2 now, peak 2 of 8"' in html
    # A two-day booking's answer redraws the quota over its window: 2 + 1 now; on day two the first
    # booking has ended, so 1 + 3 at the peak.
    form = {"tenant": "acme", "pool": "lab-pool", "count": "1", "device_class": "gpu"}
    answer = alice.post("/book/", {**form, "duration": "2d", "idempotency_key": "q-1"}, **HX).text
    assert "Quota of acme" in answer
    assert quota_row(answer, "gpu") == ["3", "4", "8"]
    assert "anything else" in answer  # the default row, for every other resource


def test_a_tenant_without_any_quota_row_reads_no_quota_limits(client, make_node, db):
    from django.contrib.auth.models import User

    bare = make_tenant("bare", default_quota=None)
    user = User.objects.create_user("bea")
    bare.users.add(user)
    client.force_login(user)
    make_node("node-a", gpus=2)
    html = client.get("/book/").text
    assert "No quota limits." in html
    assert "quota-bar" not in html
    assert "No quota limits." in client.get("/reservations/").text


def test_the_reservations_list_draws_a_bar_per_limit_with_now_and_peak(alice, make_node, tenant, book):
    make_node("node-a", gpus=4)
    Quota.objects.create(tenant=tenant, resource="gpu", limit=4)
    book("acme", gpus=1)
    book_later(4, 30, 40)
    html = alice.get("/reservations/").text
    # A week from now: 1 now, 4 at the peak (the two do not overlap), of 4: tight, so drawn in red.
    assert quota_row(html, "gpu") == ["1", "4", "4"]
    assert 'class="quota-tight"' in html
    assert 'style="width: 100.0%"' in html and 'style="width: 25.0%"' in html


def test_the_pool_page_charts_free_gpus_and_the_largest_free_nvlink_block_per_hour(
    op, make_node, tenant, book
):
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    book("acme", gpus=4)  # fills node-a for a day (the fullest that fits, ties on name)
    book("acme", gpus=1)  # then one of node-b
    html = op.get("/pools/lab-pool/").text
    assert "Free capacity, next 14 days" in html
    assert "<title>gpu free per hour (free), at most 8</title>" in html
    gpu = bar_titles(html, "gpu free")
    assert gpu[0].endswith("UTC: 3 of 8 gpu free")
    assert gpu[-1].endswith("UTC: 8 of 8 gpu free")
    nvlink = bar_titles(html, "largest free NVLink block")
    assert nvlink[0].endswith("largest free NVLink block: 3 GPUs")
    assert nvlink[-1].endswith("largest free NVLink block: 4 GPUs")
    # 14 days of hours from now: a label under each day whose noon is drawn, 14 of them.
    assert len(re.findall(r'text-anchor="middle" fill="#5d6778">\w{3} \d\d<', html)) == 14
    # The chart is drawn with the page, not with the node list's htmx answers.
    assert "Free capacity" not in op.get("/pools/lab-pool/?state=", **HX).text


def test_a_pool_of_pcie_boards_says_no_gpus_share_nvlink(op, make_node):
    make_node("node-a", gpus=2, links="PIX")
    html = op.get("/pools/lab-pool/").text
    assert "No two GPUs in lab-pool share NVLink." in html
    assert "largest free NVLink block" not in html


def test_a_tenant_charts_only_the_nodes_it_may_book_and_the_operator_every_bookable_node(
    alice, op, make_node, tenant
):
    make_tenant("globex")
    make_node("node-a", gpus=4)
    make_node("node-d", gpus=2)
    make_node("node-e", gpus=2)
    nodes.dedicate("node-d", "globex")
    nodes.cordon("node-e")
    assert bar_titles(alice.get("/pools/lab-pool/").text, "gpu free")[0].endswith("4 of 4 gpu free")
    assert "only nodes you may book" in alice.get("/pools/lab-pool/").text
    # The operator counts the dedicated node (some tenant may book it), never the cordoned one.
    assert bar_titles(op.get("/pools/lab-pool/").text, "gpu free")[0].endswith("6 of 6 gpu free")


def test_the_booking_page_charts_each_pool_the_tenant_may_book_and_no_other(alice, make_node, site, tenant):
    from inventory.models import Pool

    other = make_tenant("globex")
    private = Pool.objects.create(slug="globex-pool", name="Globex private", site=site, owner_tenant=other)
    make_node("node-a", gpus=2)
    make_node("globex-node", gpus=2, pool=private)
    html = alice.get("/book/").text
    assert 'id="availability-lab-pool"' in html
    assert "globex-pool" not in html
    # The form's htmx answers carry the quota, not the charts.
    answer = alice.post("/book/", {"tenant": "acme", "pool": "lab-pool", "count": 9}, **HX).text
    assert "availability-lab-pool" not in answer


def test_the_chart_costs_the_same_queries_whatever_the_nodes_and_bookings(make_node, tenant, book):
    make_node("node-a", gpus=4)
    book("acme", gpus=1)
    with CaptureQueriesContext(connection) as small:
        pool_charts(["lab-pool"], EVERYONE)
    for name in ("node-b", "node-c", "node-d"):
        make_node(name, gpus=4)
    for _ in range(6):
        book("acme", gpus=2)
    pool_charts(["lab-pool"], EVERYONE)  # the pool index is built again after the inventory changed
    with CaptureQueriesContext(connection) as large:
        charts = pool_charts(["lab-pool"], Scope(frozenset({"acme"})))
    assert charts[0].panels[0].least == 16 - 1 - 12
    assert len(large) <= len(small) + 1  # the tenant's view reads the tenant's key once more
