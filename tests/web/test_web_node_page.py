"""The node page: devices, topology matrix, booking timeline, and the operator action panel."""

import re

import pytest

from inventory.models import Device, DeviceLink, Node, NodeLabel, NodeTaint

from web_helpers import HX, error_next_to, field_block


@pytest.fixture
def lab(make_node, tenant, other_tenant):
    return make_node("node-a", gpus=4, vcpu=64, memory=512)


def test_the_topology_matrix_reads_like_nvidia_smi(op, make_node):
    node = make_node("node-a", gpus=3, links=None)
    gpus = list(Device.objects.filter(node=node).order_by("index"))
    gpus[1].numa_node = 1
    gpus[1].save()
    DeviceLink.objects.create(node=node, device_a=gpus[0], device_b=gpus[1], rank="NV", nvlinks=18)
    DeviceLink.objects.create(node=node, device_a=gpus[0], device_b=gpus[2], rank="PIX")
    DeviceLink.objects.create(node=node, device_a=gpus[1], device_b=gpus[2], rank="SYS")
    html = op.get("/nodes/node-a/").text
    table = re.search(r'<table class="topo">.*?</table>', html, re.S).group(0)
    rows = re.findall(r"<tr><th scope=\"row\">(GPU\d)</th>(.*?)</tr>", table, re.S)
    matrix = {name: re.findall(r'<td class="([\w-]+)">([^<]*)</td>', cells) for name, cells in rows}
    assert matrix == {
        "GPU0": [("rank-self", "X"), ("rank-nv", "NV18"), ("rank-pix", "PIX"), ("numa", "0")],
        "GPU1": [("rank-nv", "NV18"), ("rank-self", "X"), ("rank-sys", "SYS"), ("numa", "1")],
        "GPU2": [("rank-pix", "PIX"), ("rank-sys", "SYS"), ("rank-self", "X"), ("numa", "0")],
    }
    assert "NUMA Affinity" in table


def test_unknown_links_are_marked_and_explained(op, make_node):
    make_node("node-a", gpus=2, links=None)
    html = op.get("/nodes/node-a/").text
    assert '<td class="rank-unknown">?</td>' in html
    assert "No links reported" in html


def test_devices_are_listed_with_their_attributes(op, lab):
    device = Device.objects.get(uuid="GPU-node-a-0")
    device.attributes = {"gpuProduct": "H100-SXM5-80GB", "vramGiB": 80}
    device.save()
    html = op.get("/nodes/node-a/").text
    assert "GPU-node-a-0" in html
    assert "gpuProduct=H100-SXM5-80GB" in html and "vramGiB=80" in html


def test_the_timeline_draws_each_booking_with_its_reservation_on_hover(op, lab, book):
    reservation = book("acme", gpus=2)
    html = op.get("/nodes/node-a/").text
    bars = re.findall(
        r'<span class="tl-bar tl-(\w+)" style="left: ([\d.]+)%; width: ([\d.]+)%" title="([^"]+)"', html
    )
    assert len(bars) == 2
    for when, left, width, title in bars:
        assert when == "now"
        # Two days back out of nine in all: the booking starts at the now marker.
        assert abs(float(left) - 100 * 2 / 9) < 0.5
        assert abs(float(width) - 100 * 1 / 9) < 0.5
        assert title.startswith(f"reservation {reservation.pk} (acme): ")
    assert 'class="now-line"' in html


def test_labels_show_their_source_and_conditions_their_status(op, lab):
    from inventory.models import NodeCondition

    NodeLabel.objects.create(node=lab, key="bc.dev/driver.nvidia", value="550", source="system")
    NodeLabel.objects.create(node=lab, key="rack", value="a01")
    NodeCondition.objects.create(node=lab, type="Ready", status="False", reason="KubeletDown")
    html = op.get("/nodes/node-a/").text
    assert re.search(
        # The key may wrap only between its parts (<wbr>), never mid-word.
        r"<code class=\"key\">bc.<wbr>dev/<wbr>driver.<wbr>nvidia</code></td><td>550</td>"
        r"<td><span class=\"badge info\">system</span>",
        html,
    )
    assert re.search(
        r"<code class=\"key\">rack</code></td><td>a01</td><td><span class=\"badge muted\">operator</span>",
        html,
    )
    assert "KubeletDown" in html
    assert "<code>NotReady</code>" in html  # the NoSchedule reason


def test_a_bc_dev_label_is_refused_next_to_the_key_field(op, lab):
    data = {"label-key": "bc.dev/cap.devices.limits", "label-value": "true"}
    partial = op.post("/nodes/node-a/actions/label/", data, **HX).text
    assert partial.lstrip().startswith('<div id="node-page"')
    assert error_next_to(partial, "label-key") == "labels under bc.dev/ are written by inventory only"
    # Without JavaScript: the whole page, the same message at the same field.
    full = op.post("/nodes/node-a/actions/label/", data)
    assert full.status_code == 200 and "<html" in full.text
    assert error_next_to(full.text, "label-key") == "labels under bc.dev/ are written by inventory only"
    assert 'value="bc.dev/cap.devices.limits"' in full.text  # the input is kept for correcting
    assert not NodeLabel.objects.exists()


def test_a_bad_taint_key_is_refused_next_to_the_key_field(op, lab):
    partial = op.post(
        "/nodes/node-a/actions/taint/", {"taint-key": "9lives", "taint-effect": "NoSchedule"}, **HX
    )
    assert "Taint keys start with a letter" in error_next_to(partial.text, "taint-key")
    assert not NodeTaint.objects.exists()


def test_set_and_remove_an_operator_label(op, lab):
    op.post("/nodes/node-a/actions/label/", {"label-key": "rack", "label-value": "a01"}, **HX)
    label = NodeLabel.objects.get(node=lab)
    assert (label.key, label.value, label.source) == ("rack", "a01", "operator")
    panel = op.post("/nodes/node-a/actions/unlabel/", {"unlabel-key": "rack"}, **HX).text
    assert not NodeLabel.objects.exists()
    assert "No labels." in panel


def test_add_and_remove_a_taint(op, lab):
    data = {"taint-key": "gpu-burn", "taint-value": "true", "taint-effect": "NoSchedule"}
    panel = op.post("/nodes/node-a/actions/taint/", data, **HX).text
    assert "gpu-burn" in panel
    assert Node.objects.get(name="node-a").no_schedule_reasons == ["gpu-burn=true"]
    op.post("/nodes/node-a/actions/untaint/", {"untaint-key": "gpu-burn"}, **HX)
    assert Node.objects.get(name="node-a").no_schedule_reasons == []


def test_removing_a_missing_taint_says_so(op, lab):
    panel = op.post("/nodes/node-a/actions/untaint/", {"untaint-key": "nope"}, **HX).text
    assert "the node has no taint nope" in panel


def test_dedicate_and_end_the_dedication(op, lab):
    panel = op.post("/nodes/node-a/actions/dedicate/", {"dedicate-tenant": "globex"}, **HX).text
    assert "Dedicated to <strong>globex</strong>" in panel
    assert "dedicated to globex" in panel  # the state badge
    assert NodeTaint.objects.get(node=lab).value == "globex"
    panel = op.post("/nodes/node-a/actions/undedicate/", **HX).text
    assert "Not dedicated." in panel
    assert not NodeTaint.objects.exists()


def test_the_dedicate_form_starts_at_the_nodes_current_dedication(op, lab, other_tenant):
    panel = op.post("/nodes/node-a/actions/dedicate/", {"dedicate-tenant": "globex"}, **HX).text
    assert re.search(r'<option value="globex" selected>', panel)
    assert re.search(r'<option value="globex" selected>', op.get("/nodes/node-a/").text)


def test_dedicating_to_an_unknown_tenant_is_refused_at_the_field(op, lab):
    panel = op.post("/nodes/node-a/actions/dedicate/", {"dedicate-tenant": "initech"}, **HX).text
    assert "Select a valid choice" in error_next_to(panel, "dedicate-tenant")


def test_cordon_uncordon_and_maintenance_from_the_panel(op, lab):
    panel = op.post("/nodes/node-a/actions/cordon/", **HX).text
    assert "⊘ cordoned" in panel and "/actions/uncordon/" in panel
    panel = op.post("/nodes/node-a/actions/uncordon/", **HX).text
    assert "/actions/cordon/" in panel
    op.post("/nodes/node-a/actions/maintenance-on/", **HX)
    assert Node.objects.get(name="node-a").maintenance
    panel = op.post("/nodes/node-a/actions/maintenance-off/", **HX).text
    assert not Node.objects.get(name="node-a").maintenance
    assert "Start maintenance" in panel


def test_an_unknown_action_or_node_is_not_found(op, lab):
    assert op.post("/nodes/node-a/actions/explode/").status_code == 404
    assert op.post("/nodes/node-z/actions/cordon/").status_code == 404
    assert op.post("/nodes/node-a/row/taint/").status_code == 404
    assert op.get("/nodes/node-z/").status_code == 404


def test_actions_take_only_posts(op, lab):
    assert op.get("/nodes/node-a/actions/cordon/").status_code == 405
    assert op.get("/nodes/node-a/row/cordon/").status_code == 405
    assert not Node.objects.get(name="node-a").cordoned


def test_every_form_carries_the_csrf_token(op, lab):
    html = op.get("/nodes/node-a/").text
    forms = re.findall(r'<form method="post".*?</form>', html, re.S)
    assert len(forms) >= 5
    assert all("csrfmiddlewaretoken" in form for form in forms)
    assert 'hx-headers=\'{"X-CSRFToken":' in html


def _header(html: str) -> str:
    return re.search(r'<div class="page-head">.*?</div>\s*</div>', html, re.S).group(0)


def test_a_notready_nodes_header_says_notready_and_nothing_bookable(op, lab):
    """Not "active · connected · 4/4 GPUs free now": the state the API and the pool page use."""
    from inventory.models import NodeCondition

    NodeCondition.objects.create(node=lab, type="Ready", status="False", reason="KubeletDown")
    header = _header(op.get("/nodes/node-a/").text)
    assert '<span class="muted node-state">NotReady</span>' in header
    assert "0 of 4 whole GPUs bookable now" in header and "(NotReady)" in header
    assert "active" not in header and "connected" not in header and "free now" not in header


def test_a_schedulable_nodes_header_counts_the_gpus_bookable_now(op, lab, book):
    book("acme", gpus=1)
    header = _header(op.get("/nodes/node-a/").text)
    assert '<span class="muted node-state">schedulable</span>' in header
    assert "3 of 4 whole GPUs bookable now" in header


def test_the_header_names_every_state_and_hides_another_tenants_dedication(op, alice, lab):
    from inventory import services as nodes

    nodes.cordon("node-a")
    nodes.dedicate("node-a", "globex")
    assert '<span class="muted node-state">cordoned · dedicated to globex</span>' in _header(
        op.get("/nodes/node-a/").text
    )
    nodes.uncordon("node-a")
    header = _header(alice.get("/nodes/node-a/").text)
    assert '<span class="muted node-state">dedicated to another tenant</span>' in header
    assert "0 of 4 whole GPUs bookable now" in header and "globex" not in header


# --- reasons and history ---------------------------------------------------------------------


def history_rows(html: str) -> list[list[str]]:
    """Return the cells of the history table's rows (time left out), newest first."""
    section = re.search(r'<section class="card" id="node-history".*?</section>', html, re.S).group(0)
    rows = re.findall(r"<tr><td[^>]*>.*?</td>(.*?)</tr>", section, re.S)
    return [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td>(.*?)</td>", r, re.S)] for r in rows]


def test_the_buttons_share_one_reason_and_the_history_says_who_what_and_why(op, lab):
    op.post("/nodes/node-a/actions/cordon/", {"reason": "bad fan"}, **HX)
    panel = op.post("/nodes/node-a/actions/maintenance-on/", {"reason": "firmware 1.2"}, **HX).text
    assert re.search(r"Cordoned .* UTC by olga: <q>bad fan</q>", panel)
    assert re.search(r"In maintenance since .* UTC, by olga: <q>firmware 1.2</q>", panel)
    op.post("/nodes/node-a/actions/taint/", {"taint-key": "gpu-fault", "taint-value": "true", "taint-effect": "NoSchedule", "taint-reason": "xid 79"}, **HX)  # fmt: skip
    op.post("/nodes/node-a/actions/label/", {"label-key": "rack", "label-value": "r1"}, **HX)
    op.post(
        "/nodes/node-a/actions/label/",
        {"label-key": "rack", "label-value": "r2", "label-reason": "moved"},
        **HX,
    )
    op.post(
        "/nodes/node-a/actions/dedicate/", {"dedicate-tenant": "globex", "dedicate-reason": "contract"}, **HX
    )
    page = op.get("/nodes/node-a/").text
    assert history_rows(page)[:6] == [
        ["olga", "dedicated to globex", "contract"],
        ["olga", "label rack: r1 → r2", "moved"],
        ["olga", "label rack=r1 set", "—"],
        ["olga", "taint gpu-fault=true:NoSchedule added", "xid 79"],
        ["olga", "maintenance started", "firmware 1.2"],
        ["olga", "cordoned", "bad fan"],
    ]
    assert 'name="reason"' in field_block(page, "reason")


def test_a_reason_over_200_characters_is_refused_and_nothing_changes(op, lab):
    panel = op.post("/nodes/node-a/actions/cordon/", {"reason": "x" * 201}, **HX).text
    assert "reason must be text of at most 200 characters" in panel
    assert not Node.objects.get(name="node-a").cordoned
    panel = op.post("/nodes/node-a/actions/label/", {"label-key": "rack", "label-value": "r1", "label-reason": "\x07"}, **HX).text  # fmt: skip
    assert error_next_to(panel, "label-reason") == "reason must be text of at most 200 characters"
    assert not NodeLabel.objects.exists()


def test_the_history_shows_twenty_rows_and_pages_to_older_ones(op, lab):
    for i in range(20):
        op.post("/nodes/node-a/actions/label/", {"label-key": "rack", "label-value": f"r{i}"}, **HX)
    page = op.get("/nodes/node-a/").text
    assert len(history_rows(page)) == 20
    assert history_rows(page)[0][1] == "label rack: r18 → r19"
    assert "1–20 of 21" in page
    older = op.get("/nodes/node-a/history/?page=2", **HX)
    assert older.text.lstrip().startswith('<section class="card" id="node-history"')
    assert history_rows(older.text) == [["system", "node created", "—"]]
    assert "HX-Request" in older["Vary"]
    # Without JavaScript the link gives the whole page, at that page of the history.
    full = op.get("/nodes/node-a/history/?page=2").text
    assert "<html" in full and history_rows(full) == [["system", "node created", "—"]]


def test_tenants_see_no_history(alice, lab):
    assert 'id="node-history"' not in alice.get("/nodes/node-a/").text
    assert alice.get("/nodes/node-a/history/").status_code == 403


def test_the_panel_says_what_blocks_new_placements_a_cordon_and_maintenance_included(op, lab):
    """A cordoned node read 'NoSchedule reasons: none' beside its Cordoned badge."""

    def blocks():
        html = op.get("/nodes/node-a/").text
        return re.sub(r"<[^>]+>", "", re.search(r'id="no-schedule">(.*?)</p>', html, re.S).group(1)).split()

    assert blocks() == ["Blocks", "new", "placements:", "nothing"]
    op.post("/nodes/node-a/actions/cordon/")
    op.post("/nodes/node-a/actions/maintenance-on/")
    assert blocks() == ["Blocks", "new", "placements:", "cordoned,", "maintenance"]


def test_a_reason_past_200_characters_is_refused_with_its_message_not_cut_by_the_browser(op, lab):
    html = op.get("/nodes/node-a/").text
    reason_input = re.search(r'<input type="text" name="reason"[^>]*>', html).group(0)
    assert "maxlength" not in reason_input
    refused = op.post("/nodes/node-a/actions/cordon/", {"reason": "x" * 10_000}, **HX).text
    assert "reason must be text of at most 200 characters" in refused
    assert not Node.objects.get(name="node-a").cordoned


def test_a_node_whose_devices_are_all_unusable_says_so_beside_its_state(op, lab):
    """Nothing stops a placement on it, so it reads schedulable; nothing can be booked there either."""
    assert "devices usable" not in op.get("/nodes/node-a/").text
    for device in Device.objects.filter(node__name="node-a"):  # saved one by one: rollups follow
        device.healthy = False
        device.save(update_fields=["healthy"])
    html = op.get("/nodes/node-a/").text
    assert re.search(
        r'<span class="badge bad" title="every device is unhealthy or unbookable">✕ 0 of \d+ devices usable</span>',
        html,
    )


def test_operators_see_when_the_agent_last_reported_and_the_images_it_holds(op, alice, lab):
    from rest_framework.test import APIClient

    from identity.tokens import issue_node_token

    assert "none yet (known from fleet import or by hand)" in op.get("/nodes/node-a/").text
    agent = APIClient()
    agent.credentials(HTTP_AUTHORIZATION=f"Token {issue_node_token('node-a').key}")
    images = [f"registry.lab/team/image-{i:02d}:v1" for i in range(10)]
    body = {"images": [*images, {"image": "registry.lab/big:v9", "state": "pulling"}]}
    assert agent.post("/api/v1/nodes/node-a/report", body, format="json").status_code == 200
    html = op.get("/nodes/node-a/").text
    assert re.search(r"Last report: \w{3} \d\d \d\d:\d\d UTC by <code>node\.node-a</code>", html)
    shown = re.search(r'<p class="small" id="image-cache">(.*?)</p>', html, re.S).group(1)
    assert '<code>registry.lab/big:v9</code> <span class="muted">(pulling)</span>' in shown
    assert shown.count("<code>") == 8 and "and more" in shown
    tenant_view = alice.get("/nodes/node-a/").text
    assert "Last report" not in tenant_view and "image-cache" not in tenant_view
