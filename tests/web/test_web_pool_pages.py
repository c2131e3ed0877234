"""The pools page and a pool's node list: capacity bars, GPU grid, filters, pages and query counts."""

import re

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory import services as nodes
from inventory.models import Device, NodeLabel, NodeResource

from web_helpers import HX, error_next_to


def cells(html: str, node: str) -> list[str]:
    """Return the states of a node's GPU cells in the pool page, in order."""
    row = re.search(rf'<tr id="row-{node}".*?</tr>', html, re.S)
    assert row, f"no row for {node}"
    return re.findall(r'class="gpu s-(\w+)', row.group(0))


def test_the_pools_page_shows_each_pool_with_its_buckets(op, make_node, tenant, book):
    make_node("node-a", gpus=4)
    make_node("node-b", gpus=4)
    nodes.cordon("node-b")
    book("acme", gpus=1)
    html = op.get("/").text
    assert "lab-pool" in html and "Lab pool" in html
    assert re.search(r"<dt>Nodes</dt><dd>2</dd>", html)
    assert re.search(r"<dt>Site</dt><dd>lab</dd>", html)
    assert "8 × gpu" in html
    # Numbers and names, not colour alone: every non-empty bucket is written out.
    # A cordoned node's atoms count as cordoned, not as maintenance (one vocabulary, issue 18).
    assert "1 allocated" in html and "3 free" in html and "4 cordoned" in html
    assert "4 maintenance" not in html
    names = (
        "allocated",
        "free",
        "excluded",
        "maintenance",
        "cordoned",
        "provisioning",
        "unreachable",
        "unhealthy",
    )
    for name in names:
        assert f"seg-{name}" in html  # the legend lists every bucket


def test_the_grid_draws_each_atom_in_its_state(op, make_node, tenant, book):
    from capacity import services

    make_node("node-a", gpus=4)
    book("acme", gpus=1)
    later = services.reserve(
        {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "devices": [{"class": "gpu", "count": 1}],
            "during": {"start": "2099-01-01T00:00:00+00:00", "end": "2099-01-02T00:00:00+00:00"},
        }
    ).reservation
    assert later.status == "placed"
    unhealthy = Device.objects.get(uuid="GPU-node-a-3")
    unhealthy.healthy = False
    unhealthy.save()
    html = op.get("/pools/lab-pool/").text
    # The far-future booking is outside the week the grid shows.
    assert cells(html, "node-a") == ["now", "free", "free", "unhealthy"]


def test_a_booking_later_this_week_and_an_unbookable_device(op, make_node, tenant):
    from datetime import timedelta

    from django.utils import timezone

    from capacity import services

    make_node("node-a", gpus=2)
    start = timezone.now() + timedelta(days=2)
    services.reserve(
        {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "devices": [{"class": "gpu", "count": 1}],
            "during": {"start": start.isoformat(), "end": (start + timedelta(hours=6)).isoformat()},
        }
    )
    device = Device.objects.get(uuid="GPU-node-a-1")
    device.bookable = False
    device.save()
    html = op.get("/pools/lab-pool/").text
    assert cells(html, "node-a") == ["later", "unbookable"]
    assert "1/2" in html  # booked later is still free now


def test_mig_slices_are_drawn_inside_their_gpu(op, make_node):
    node = make_node("node-a", gpus=1)
    parent = Device.objects.get(node=node)
    for i in range(3):
        Device.objects.create(
            node=node, uuid=f"MIG-a-{i}", device_class="mig-1g.10gb", parent=parent, index=i
        )
    html = op.get("/pools/lab-pool/").text
    row = re.search(r'<tr id="row-node-a".*?</tr>', html, re.S).group(0)
    assert re.search(r'class="gpu s-free parted".*?<span class="slices">(.*?)</span></span>', row, re.S)
    assert row.count('class="slice s-free"') == 3


def test_state_badges_name_every_state(op, make_node, tenant):
    from inventory.models import Node, NodeCondition

    make_node("node-a", gpus=1)
    make_node("node-b", gpus=1, connectivity=Node.Connectivity.DISCONNECTED)
    make_node("node-c", gpus=1, provision_state=Node.ProvisionState.PROVISIONING)
    make_node("node-d", gpus=1)
    make_node("node-e", gpus=1)
    nodes.cordon("node-a")
    nodes.set_maintenance("node-a", True)
    nodes.dedicate("node-d", "acme")
    nodes.add_taint("node-e", "gpu-burn", "true")
    NodeCondition.objects.create(node=Node.objects.get(name="node-e"), type="Ready", status="False")
    html = op.get("/pools/lab-pool/").text
    for text in (
        "cordoned",
        "maintenance",
        "unreachable: disconnected",
        "◌ provisioning",
        "dedicated to acme",
        "tainted gpu-burn=true:NoSchedule",
        "✕ NotReady",
    ):
        assert text in html
    # NotReady reads as the API's state says it, not as the placer's NoSchedule reason.
    assert "NoSchedule: NotReady" not in html


def test_labels_and_scalar_room(op, make_node, tenant):
    from capacity import services

    node = make_node("node-a", gpus=2, vcpu=64, memory=512)
    make_node("node-b", gpus=2, vcpu=64, memory=512)
    # Scalar claims need the capability label that inventory (not an operator) writes.
    NodeLabel.objects.create(node=node, key="bc.dev/cap.devices.limits", value="true", source="system")
    nodes.set_label("node-a", "rack", "a01")
    nodes.set_label("node-b", "rack", "b01")
    result = services.reserve(
        {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "devices": [{"class": "gpu", "count": 1}],
            "resources": {"vcpu": 16},
            "duration": "1d",
        }
    )
    assert result.reservation.status == "placed"
    html = op.get("/pools/lab-pool/").text
    row_a = re.search(r'<tr id="row-node-a".*?</tr>', html, re.S).group(0)
    row_b = re.search(r'<tr id="row-node-b".*?</tr>', html, re.S).group(0)
    assert "rack=a01" in row_a and "rack=b01" in row_b
    assert "+1 system" in row_a and "system" not in row_b
    assert '<td class="num">48/64</td>' in row_a and '<td class="num">512/512</td>' in row_a
    assert '<td class="num">64/64</td>' in row_b


@pytest.mark.parametrize(
    ("params", "shown"),
    [
        ("state=cordoned", ["node-b"]),
        ("state=schedulable", ["node-a", "node-c"]),
        ("label=rack=a01", ["node-a"]),
        ("label=rack", ["node-a", "node-c"]),
        ("free_gpus=2", ["node-c"]),  # node-b is cordoned: its free GPUs cannot be booked now
        ("q=node-c", ["node-c"]),
    ],
)
def test_the_shared_filterset_filters_the_rows(op, make_node, tenant, book, params, shown):
    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=2)
    nodes.set_label("node-a", "rack", "a01")
    nodes.set_label("node-c", "rack", "c01")
    nodes.cordon("node-b")
    book("acme", gpus=1)  # binpack: lands on node-a
    html = op.get(f"/pools/lab-pool/?{params}").text
    assert re.findall(r'<tr id="row-([\w-]+)"', html) == shown


def test_a_bad_filter_value_shows_the_filtersets_message_next_to_its_field(op, make_node):
    make_node("node-a", gpus=1)
    html = op.get("/pools/lab-pool/?free_gpus=lots").text
    assert error_next_to(html, "free_gpus") == "free_gpus must be a whole number"
    assert "No nodes match" in html
    # With htmx the message reaches the field out of band, since only the node list is swapped.
    partial = op.get("/pools/lab-pool/?free_gpus=lots", **HX).text
    assert (
        '<span class="field-error" id="filter-error-free_gpus" role="alert" hx-swap-oob="true">'
        "free_gpus must be a whole number</span>"
    ) in partial


def test_the_filter_form_works_with_and_without_htmx(op, make_node):
    make_node("node-a", gpus=1)
    html = op.get("/pools/lab-pool/").text
    form = re.search(r'<form class="filters card"[^>]*>', html).group(0)
    assert 'method="get"' in form and 'action="/pools/lab-pool/"' in form
    assert 'hx-get="/pools/lab-pool/"' in form and 'hx-push-url="true"' in form
    labels = re.findall(r'<label for="id_(\w+)">([^<]*)</label>', html)
    assert labels[:4] == [("q", "Name"), ("state", "State"), ("label", "Label"), ("free_gpus", "Free GPUs ≥")]


def test_fifty_nodes_to_a_page_with_links_that_keep_the_filter(op, make_node):
    for i in range(60):
        make_node(f"n{i:03d}", gpus=1, links=None)
    first = op.get("/pools/lab-pool/?state=schedulable").text
    assert len(re.findall(r'<tr id="row-', first)) == 50
    assert "Nodes 1–50 of 60" in first
    assert 'href="?state=schedulable&amp;page=2"' in first
    assert 'hx-get="?state=schedulable&amp;page=2"' in first
    second = op.get("/pools/lab-pool/?state=schedulable&page=2").text
    assert len(re.findall(r'<tr id="row-', second)) == 10


def _queries(client, url):
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured)


@pytest.mark.parametrize("who", ["op", "alice"])
def test_the_pool_page_runs_the_same_queries_for_10_and_60_nodes(request, make_node, tenant, who):
    from capacity import services

    client = request.getfixturevalue(who)
    for i in range(10):
        make_node(f"n{i:03d}", gpus=4, vcpu=64, memory=256)
        nodes.set_label(f"n{i:03d}", "rack", f"r{i}")
    for _ in range(5):
        services.reserve(
            {
                "tenantId": "acme",
                "poolId": "lab-pool",
                "devices": [{"class": "gpu", "count": 2}],
                "duration": "1d",
            }
        )
    small = _queries(client, "/pools/lab-pool/")
    for i in range(10, 60):
        make_node(f"n{i:03d}", gpus=4, vcpu=64, memory=256)
        nodes.set_label(f"n{i:03d}", "rack", f"r{i}")
        nodes.add_taint(f"n{i:03d}", "team", "x", "PreferNoSchedule")
    for _ in range(20):
        services.reserve(
            {
                "tenantId": "acme",
                "poolId": "lab-pool",
                "devices": [{"class": "gpu", "count": 1}],
                "duration": "1d",
            }
        )
    large = _queries(client, "/pools/lab-pool/")
    cache.key_prefix += "-again"  # drawn again, as after a booking: the chart is kept for any filter
    filtered = _queries(client, "/pools/lab-pool/?free_gpus=1&state=schedulable&page=2")
    # With the free-GPUs filter the nodes section is drawn and not kept: the other three are still
    # stored, in the same one statement.
    assert small == large == filtered
    # session with its user, operators group and tenants (one statement: identity/sessions.py),
    # pools, pool tenants, count, nodes, the pool's generation, devices, labels, resources, taints, bookings, scalar
    # claims now; the availability chart: the pool with its generation, (a tenant user: its
    # tenants' keys), the 14 days' bookings; the Shares section: the pool's shares (an operator: the
    # tenants of its form and the pool's rollups for its bookable GPUs); the Policy section: the
    # pool's policy (an operator: the bookings kept when idle); the maintenance windows section: the
    # windows not yet over (their nodes too, when there are some); the Slurm section: the pool's
    # bridge (none here, so nothing more, and nothing read again on a kept page).
    # And for the five fragments kept in the cache (the nodes section, the chart, the Shares, Policy
    # and Slurm sections, the filter form, the windows): the pool's versions, one read of the five and
    # one store of the five (config/cache.py; Django's database cache took five statements a key).
    # The pool has no shares, so no team lacks quota for one: nothing more is read for the warning.
    assert small == {"op": 19, "alice": 17}[who] + 1 + 1 + 1 + 1 + 1
    # Again, nothing changed: all five are the kept ones. The pool's versions and one cache read
    # instead of count, nodes, generation, devices, labels, resources, taints, bookings and claims,
    # the chart's pool, (tenant keys) and bookings, the shares (the form's tenants, the rollups) and
    # the policy. An operator's bookings kept when idle are still read (its teams without a GPU quota
    # only in a pool with shares); a tenant's tenants come with the session (their ids too, so the
    # pool's check reads no tenant rows): 6 for an operator (9 before the session read them, 7 while
    # a pool without shares read its teams without quota), 5 for a tenant (9).
    _queries(client, "/pools/lab-pool/?state=schedulable&page=2")
    _queries(client, "/pools/lab-pool/?state=schedulable&page=2")  # a minute may end between
    assert _queries(client, "/pools/lab-pool/?state=schedulable&page=2") == {"op": 6, "alice": 5}[who]


def test_the_row_action_keeps_the_labels_the_page_shows_once(op, make_node):
    make_node("node-a", gpus=1)
    make_node("node-b", gpus=1)
    for name in ("node-a", "node-b"):
        nodes.set_label(name, "team", "ml")
    html = op.get("/pools/lab-pool/").text
    assert 'name="common" value="team=ml"' in html
    row = op.post("/nodes/node-a/row/cordon/", {"common": "team=ml"}, **HX).text
    assert '<span class="chip">team=ml</span>' not in row
    assert 'name="common" value="team=ml"' in row


def test_the_free_gpus_filter_and_the_row_count_only_gpus_bookable_now(op, make_node, tenant):
    """Cordoned, maintenance, unreachable, provisioning and NotReady nodes have no GPU to book now."""
    from inventory.models import Node, NodeCondition

    for name in ("ok", "cord", "maint", "away", "prov", "notready"):
        make_node(name, gpus=2)
    nodes.cordon("cord")
    nodes.set_maintenance("maint", True)
    Node.objects.filter(name="away").update(connectivity=Node.Connectivity.DISCONNECTED)
    Node.objects.filter(name="prov").update(converged=False)
    NodeCondition.objects.create(node=Node.objects.get(name="notready"), type="Ready", status="False")
    from capacity.rollups import refresh_rollups

    refresh_rollups([Node.objects.get(name="ok").pool_id])  # rows written around the services
    html = op.get("/pools/lab-pool/?free_gpus=1").text
    assert re.findall(r'<tr id="row-([\w-]+)"', html) == ["ok"]
    everything = op.get("/pools/lab-pool/").text
    counts = dict(
        re.findall(
            r'<tr id="row-([\w-]+)".*?<span class="free-count"[^>]*>(\d+/\d+)</span>', everything, re.S
        )
    )
    assert counts == {
        "ok": "2/2",
        "cord": "0/2",
        "maint": "0/2",
        "away": "0/2",
        "prov": "0/2",
        "notready": "0/2",
    }


def test_a_tenant_reads_another_tenants_dedication_as_not_bookable(alice, make_node, tenant, other_tenant):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    nodes.dedicate("node-b", "globex")
    html = alice.get("/pools/lab-pool/").text
    row_b = re.search(r'<tr id="row-node-b".*?</tr>', html, re.S).group(0)
    assert 'class="node-row blocked"' in row_b and ">0/2</span>" in row_b
    assert "dedicated to another tenant" in row_b and "schedulable" not in row_b
    assert re.findall(r'<tr id="row-([\w-]+)"', alice.get("/pools/lab-pool/?state=schedulable").text) == [
        "node-a"
    ]


def test_the_state_filter_offers_the_vocabulary_and_finds_notready_nodes(op, make_node):
    from inventory.models import Node, NodeCondition
    from inventory.states import NAMES

    make_node("node-a", gpus=1)
    make_node("node-b", gpus=1)
    NodeCondition.objects.create(node=Node.objects.get(name="node-b"), type="Ready", status="False")
    html = op.get("/pools/lab-pool/?state=NotReady").text
    assert re.findall(r'<tr id="row-([\w-]+)"', html) == ["node-b"]
    select = re.search(r'<select name="state".*?</select>', html, re.S).group(0)
    assert re.findall(r'<option value="([^"]*)"', select) == ["", *NAMES]
    assert error_next_to(op.get("/pools/lab-pool/?state=asleep").text, "state").startswith(
        "state must be one of excluded, maintenance, cordoned"
    )


def test_a_label_or_resource_changed_after_a_page_shows_on_the_next_page(op, make_node):
    """The process keeps devices, labels and resources per pool generation: a change bumps it."""
    make_node("node-a", gpus=2, vcpu=64)
    assert "rack=r1" not in op.get("/pools/lab-pool/").text
    nodes.set_label("node-a", "rack", "r1")
    assert "rack=r1" in op.get("/pools/lab-pool/").text
    NodeResource.objects.filter(node__name="node-a", resource="vcpu").update(allocatable=32)
    assert "32/32" in op.get("/pools/lab-pool/").text
