"""What a node may say through its own credential, and what only an operator may (inventory.trust).

lab: node-a and node-b, 4 NVLinked GPUs each, in lab-pool.
"""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from test_api_node_credentials import as_node
from test_metrics import delta, scrape

from inventory.models import Device, Node, NodeLabel, NodeRefusal, NodeReport, NodeTaint


def gpu(i, node="node-a", **fields):
    return {"uuid": f"GPU-{node}-{i}", "class": "gpu", "index": i, "parent": None, "healthy": True, **fields}


def report(client, devices=None, node="node-a", **body):
    if devices is not None:
        body["devices"] = devices
    return client.post(f"/api/v1/nodes/{node}/report", body, format="json")


def test_the_first_report_of_a_node_without_devices_brings_them_verified(lab, make_node):
    make_node("node-new", gpus=0)
    client, _ = as_node("node-new")
    answer = report(client, [gpu(0, "node-new"), gpu(1, "node-new")], node="node-new")
    assert answer.status_code == 200, answer.json()
    assert (answer.json()["created"], answer.json()["unverified"]) == (2, 0)
    assert list(Device.objects.filter(node__name="node-new").values_list("verified", "bookable")) == [
        (True, True),
        (True, True),
    ]


def test_hardware_a_node_adds_later_is_shown_unverified_and_counted_nowhere(lab, as_operator, as_acme, ask):
    client, _ = as_node("node-a")
    answer = report(client, [gpu(i) for i in range(5)])
    assert answer.status_code == 200, answer.json()
    assert (answer.json()["created"], answer.json()["unverified"]) == (1, 1)
    detail = as_operator.get("/api/v1/nodes/node-a").json()
    new = next(d for d in detail["devices"] if d["uuid"] == "GPU-node-a-4")
    assert (new["verified"], new["bookable"], new["healthy"]) == (False, False, True)
    assert detail["deviceCounts"] == {"gpu": 4}
    assert detail["freeGpusNow"] == 4
    pool = next(
        c for c in as_operator.get("/api/v1/pools/lab-pool").json()["capacity"] if c["class"] == "gpu"
    )
    assert pool["total"] == 8
    # Five GPUs on one node never fit: the fifth is not offered, nor counted as the node's size.
    preview = as_acme.post("/api/v1/capacity/preview", ask(5), format="json").json()
    assert (preview["fits"], preview["candidates"]) == (False, [])
    assert preview["unsatisfiable"] == "the largest node in lab-pool has 4 gpu"


def test_an_operator_accepts_new_devices_over_the_api_and_then_they_count(lab, as_operator, as_acme, ask):
    client, _ = as_node("node-a")
    report(client, [gpu(i) for i in range(6)])
    refused = client.post("/api/v1/nodes/node-a/devices/accept", {}, format="json")
    assert refused.status_code == 403
    unknown = as_operator.post("/api/v1/nodes/node-a/devices/accept", {"uuids": ["GPU-nope"]}, format="json")
    assert unknown.status_code == 404 and "GPU-nope" in unknown.json()["message"]
    bad = as_operator.post("/api/v1/nodes/node-a/devices/accept", {"uuids": "GPU-node-a-4"}, format="json")
    assert bad.status_code == 400 and bad.json()["message"].startswith("uuids must be a list")
    one = as_operator.post("/api/v1/nodes/node-a/devices/accept", {"uuids": ["GPU-node-a-4"]}, format="json")
    assert one.status_code == 200, one.json()
    assert one.json()["accepted"] == ["GPU-node-a-4"]
    assert one.json()["node"]["deviceCounts"] == {"gpu": 5}
    rest = as_operator.post("/api/v1/nodes/node-a/devices/accept", format="json")
    assert rest.json()["accepted"] == ["GPU-node-a-5"]
    assert Device.objects.filter(node__name="node-a", verified=False).count() == 0
    preview = as_acme.post("/api/v1/capacity/preview", ask(6), format="json").json()
    assert [r["nodeId"] for r in preview["candidates"]] == ["node-a"]


def test_accept_devices_command_accepts_all_or_the_named_and_refuses_unknown_ones(lab):
    client, _ = as_node("node-a")
    report(client, [gpu(i) for i in range(6)])
    out = io.StringIO()
    call_command("accept_devices", "node-a", "GPU-node-a-5", stdout=out)
    assert out.getvalue().strip() == "node-a: accepted 1 device: GPU-node-a-5"
    with pytest.raises(CommandError, match="NOT_FOUND: uuids: node node-a has no unverified device GPU-x"):
        call_command("accept_devices", "node-a", "GPU-x")
    call_command("accept_devices", "node-a", stdout=out)
    assert "accepted 1 device: GPU-node-a-4" in out.getvalue()
    assert not Device.objects.filter(verified=False).exists()


def test_an_operators_report_adds_verified_devices(lab, as_operator):
    answer = report(as_operator, [gpu(i) for i in range(5)])
    assert (answer.json()["created"], answer.json()["unverified"]) == (1, 0)
    assert Device.objects.get(uuid="GPU-node-a-4").verified


def test_a_node_may_not_reshape_a_booked_gpu_and_its_refusal_is_kept_and_counted(
    lab, as_operator, acme, reserve_as
):
    reservation = reserve_as(acme, gpus=2)
    [allocation] = reservation["allocations"]
    booked = allocation["atoms"][0]
    node_name = allocation["nodeId"]
    client, _ = as_node(node_name)
    assert report(client, [gpu(i, node_name) for i in range(4)]).status_code == 200
    seen = NodeReport.objects.get(node__name=node_name).at
    before = scrape(as_operator)
    index = int(booked.rsplit("-", 1)[1])
    devices = [gpu(i, node_name) for i in range(4)]
    devices[index] = gpu(index, node_name, **{"class": "cpu"})
    answer = report(client, devices, labels={"bc.dev/rack": "r9"})
    assert answer.status_code == 409
    message = answer.json()["message"]
    assert answer.json()["code"] == "CONFLICT"
    assert f"{booked} (class gpu → cpu) is booked by reservation {reservation['id']}" in message
    assert f"Drain the node first (POST /api/v1/nodes/{node_name}/drain)" in message
    # Nothing written: neither the class nor the label; the last report is the one before.
    assert Device.objects.get(uuid=booked).device_class == "gpu"
    assert not NodeLabel.objects.filter(key="bc.dev/rack").exists()
    assert NodeReport.objects.get(node__name=node_name).at == seen
    refusal = as_operator.get(f"/api/v1/nodes/{node_name}").json()["lastRefusal"]
    assert (refusal["code"], refusal["by"]) == ("CONFLICT", f"node.{node_name}")
    assert refusal["message"] == message and refusal["at"]
    assert delta(before, scrape(as_operator), "berth_node_reports_refused_total", reason="conflict") == 1
    # A new MIG slice under the booked GPU is a change of its shape too.
    slice_ = {"uuid": "MIG-x", "class": "mig-1g.10gb", "index": 0, "parent": booked, "healthy": True}
    answer = report(client, [gpu(i, node_name) for i in range(4)] + [slice_])
    assert answer.status_code == 409 and "a new MIG slice MIG-x" in answer.json()["message"]


def test_a_refused_report_before_any_report_leaves_last_report_empty(lab, as_operator, as_acme):
    client, _ = as_node("node-a")
    assert report(client, "not a list").status_code == 400
    detail = as_operator.get("/api/v1/nodes/node-a").json()
    assert detail["lastReport"] is None
    assert detail["lastRefusal"]["code"] == "INVALID_INPUT"
    assert detail["lastRefusal"]["by"] == "node.node-a"
    assert NodeRefusal.objects.count() == 1
    # Tenants read nodes, not what their reports said.
    assert as_acme.get("/api/v1/nodes/node-a").json()["lastRefusal"] is None


def test_a_node_never_touches_an_operators_labels_taints_dedication_or_bookable_choice(
    lab, as_operator, tenant
):
    as_operator.post("/api/v1/nodes/node-a/labels", {"key": "team", "value": "ml"}, format="json")
    as_operator.post("/api/v1/nodes/node-a/taints", {"key": "gpu.flaky", "value": "yes"}, format="json")
    as_operator.post("/api/v1/nodes/node-a/dedicate", {"tenant": "acme"}, format="json")
    Device.objects.filter(uuid="GPU-node-a-3").update(bookable=False)
    # An operator-made label under bc.dev/ (the admin can) is the operator's too.
    NodeLabel.objects.create(node=Node.objects.get(name="node-a"), key="bc.dev/site", value="fra")
    client, _ = as_node("node-a")
    refused = report(client, [gpu(i) for i in range(4)], labels={"team": "hacked"})
    assert refused.status_code == 403
    assert refused.json()["message"].startswith(
        "labels['team']: a node may report only system labels, under bc.dev/"
    )
    answer = report(client, [gpu(i) for i in range(4)], labels={"bc.dev/site": "evil", "bc.dev/rack": "r1"})
    assert answer.status_code == 200, answer.json()
    # The next report leaves them all out: only the node's own system label goes.
    report(client, [gpu(i) for i in range(4)], labels={})
    node = Node.objects.get(name="node-a")
    assert set(node.labels.values_list("key", "value", "source")) == {
        ("team", "ml", "operator"),
        ("bc.dev/site", "fra", "operator"),
    }
    assert set(NodeTaint.objects.filter(node=node).values_list("key", flat=True)) == {
        "gpu.flaky",
        "dedicated",
    }
    assert not Device.objects.get(uuid="GPU-node-a-3").bookable


def test_made_up_devices_a_node_stops_claiming_are_withdrawn_and_never_hold_it_at_the_cap(lab, as_operator):
    client, _ = as_node("node-a")
    fakes = [{"uuid": f"GPU-fake-{i}", "class": "gpu", "index": 10 + i, "healthy": True} for i in range(252)]
    assert report(client, [gpu(i) for i in range(4)] + fakes).status_code == 200
    assert Device.objects.filter(node__name="node-a", verified=False).count() == 252
    # The real agent reports again, with a GPU that really appeared: the fakes go, no "replace" needed.
    answer = report(client, [gpu(i) for i in range(5)])
    assert answer.status_code == 200, answer.json()
    assert (answer.json()["markedUnhealthy"], answer.json()["unverified"]) == (0, 1)
    assert sorted(Device.objects.filter(node__name="node-a").values_list("uuid", "verified")) == [
        *((f"GPU-node-a-{i}", True) for i in range(4)),
        ("GPU-node-a-4", False),
    ]
    assert as_operator.get("/api/v1/nodes/node-a").json()["deviceCounts"] == {"gpu": 4}


def test_a_report_that_is_no_json_is_kept_as_the_last_refusal(lab, as_operator):
    client, _ = as_node("node-a")
    answer = client.post("/api/v1/nodes/node-a/report", "{devices: [", content_type="application/json")
    assert (answer.status_code, answer.json()["code"]) == (400, "INVALID_INPUT")
    refusal = as_operator.get("/api/v1/nodes/node-a").json()["lastRefusal"]
    assert refusal["code"] == "INVALID_INPUT" and refusal["message"].startswith("report: JSON parse error")
