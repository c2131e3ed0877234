"""The node page and what a node may say: hardware waiting for an operator, and the last refusal."""

import pytest

from inventory.errors import IngestError
from inventory.ingest import Reporter, apply_node_report
from inventory.models import Device, Node

from web_helpers import HX

NODE = Reporter.node_credential("node.node-a")


def report(count, **first):
    devices = [{"uuid": f"GPU-node-a-{i}", "class": "gpu", "index": i, "healthy": True} for i in range(count)]
    devices[0].update(first)
    return {"devices": devices}


@pytest.fixture
def waiting(make_node, tenant):
    """node-a: 4 GPUs, and a fifth its own credential reported afterwards."""
    node = make_node("node-a", gpus=4)
    apply_node_report(node, report(5), by=NODE)
    return node


def test_an_unverified_device_is_listed_counted_nowhere_and_accepted_in_place(op, waiting):
    html = op.get("/nodes/node-a/").text
    assert "1 new device waiting for an operator" in html
    assert "? unverified" in html
    assert "4 of 4 whole GPUs bookable now" in html
    pool = op.get("/pools/lab-pool/").text
    assert 'title="GPUs bookable now / all GPUs">4/4<' in pool
    answer = op.post("/nodes/node-a/actions/accept-devices/", {}, **HX).text
    assert answer.lstrip().startswith('<div id="node-page">')
    assert "new device waiting for an operator" not in answer
    assert "5 of 5 whole GPUs bookable now" in answer
    assert Device.objects.get(uuid="GPU-node-a-4").verified


def test_tenants_see_no_accept_button_and_cannot_accept(alice, waiting):
    html = alice.get("/nodes/node-a/").text
    assert "new device waiting for an operator" not in html
    assert alice.post("/nodes/node-a/actions/accept-devices/", {}, **HX).status_code == 403
    assert not Device.objects.get(uuid="GPU-node-a-4").verified


def test_the_last_refused_report_shows_on_the_node_page(op, waiting):
    with pytest.raises(IngestError):
        apply_node_report(Node.objects.get(name="node-a"), {"labels": {"team": "x"}}, by=NODE)
    html = op.get("/nodes/node-a/").text
    assert "Last refused report" in html
    assert "node.node-a" in html and "FORBIDDEN" in html
    assert "labels[&#x27;team&#x27;]: a node may report only system labels" in html
