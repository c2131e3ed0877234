"""Nodes over HTTP: a node's report and topology are ingested, and a GPU gone bad moves its booking."""

import pytest

from inventory.models import Device, DeviceLink

TOPO = (
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tNV18\t0-55\t0\n"
    "GPU1\tNV18\t X \t0-55\t0\n"
    "\nLegend:\n\n  X    = Self\n"
)


def test_a_node_report_writes_devices_and_system_labels(as_operator, lab):
    report = {
        "devices": [
            {"uuid": "GPU-node-a-0", "index": 0, "attributes": {"gpuProduct": "H100-SXM5-80GB"}},
            {"uuid": "GPU-node-a-1", "index": 1, "healthy": False},
            {"uuid": "GPU-new", "index": 4, "numaNode": 1},
        ],
        "labels": {"bc.dev/driver.nvidia": "550.54.15"},
    }
    response = as_operator.post("/api/v1/nodes/node-a/report", report, format="json")
    assert response.status_code == 200
    assert response.json() == {
        "devices": 3,
        "created": 1,
        "markedUnhealthy": 3,
        "becameHealthy": 0,
        "labelsSet": 1,
        "labelsRemoved": 1,
        "links": None,
        "images": None,
        "samples": 0,
        "unverified": 0,
    }
    node = as_operator.get("/api/v1/nodes/node-a").json()
    assert {d["uuid"]: d["healthy"] for d in node["devices"]} == {
        "GPU-node-a-0": True,
        "GPU-node-a-1": False,
        "GPU-node-a-2": False,
        "GPU-node-a-3": False,
        "GPU-new": True,
    }
    assert node["labels"] == [{"key": "bc.dev/driver.nvidia", "value": "550.54.15", "source": "system"}]


@pytest.mark.parametrize(
    ("report", "message"),
    [
        ([], "report: must be a JSON object"),
        (
            {"gpus": []},
            "report: unknown field 'gpus' (expected devices, nvidiaSmi, labels, topology, images, replace, processOwners)",
        ),
        (
            {"devices": [{"uuid": ""}]},
            "devices[0].uuid: must be at most 100 letters, digits and . _ : / + - (no spaces or line breaks)",
        ),
        ({"devices": [{"uuid": "x", "index": -1}]}, "devices[0].index: must be a non-negative integer"),
        ({"labels": {"1x": "y"}}, "labels['1x']: Label keys start with a letter"),
        ({"topology": "nonsense"}, "topology: "),
    ],
)
def test_a_malformed_report_is_invalid_input_and_changes_nothing(as_operator, lab, report, message):
    response = as_operator.post("/api/v1/nodes/node-a/report", report, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"
    assert response.json()["message"].startswith(message)
    assert Device.objects.filter(node__name="node-a", healthy=True).count() == 4


def test_reporting_another_nodes_device_is_a_conflict(as_operator, lab):
    response = as_operator.post(
        "/api/v1/nodes/node-a/report", {"devices": [{"uuid": "GPU-node-b-0"}]}, format="json"
    )
    assert (response.status_code, response.json()) == (
        409,
        {"code": "CONFLICT", "message": "devices: GPU-node-b-0 belongs to node node-b, not node-a"},
    )


@pytest.mark.parametrize("as_text", [True, False])
def test_topology_is_imported_from_text_or_json(as_operator, make_node, as_text):
    make_node("node-t", gpus=2, links=None)
    if as_text:
        response = as_operator.post("/api/v1/nodes/node-t/topology", TOPO, content_type="text/plain")
    else:
        response = as_operator.post("/api/v1/nodes/node-t/topology", {"text": TOPO}, format="json")
    assert (response.status_code, response.json()) == (200, {"links": 1})
    assert list(DeviceLink.objects.values_list("rank", "nvlinks")) == [("NV", 18)]


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        ("GPU0 nonsense", "text/plain", "topology: "),
        ({"text": 7}, None, "text must be a string"),
        ({}, None, "text is required"),
        (["x"], None, "send the matrix as text/plain"),
        (b"\xff\xfe", "text/plain", "the body is not utf-8 text"),
        ("a\x00b", "text/plain", "body: text must not contain NUL characters"),
    ],
)
def test_a_bad_topology_is_invalid_input(as_operator, make_node, body, content_type, message):
    make_node("node-t", gpus=2, links=None)
    if content_type:
        response = as_operator.post("/api/v1/nodes/node-t/topology", body, content_type=content_type)
    else:
        response = as_operator.post("/api/v1/nodes/node-t/topology", body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"
    assert response.json()["message"].startswith(message)


def test_a_topology_naming_a_gpu_the_node_lacks_is_invalid_input(as_operator, make_node):
    make_node("node-t", gpus=1, links=None)
    response = as_operator.post("/api/v1/nodes/node-t/topology", TOPO, content_type="text/plain")
    assert response.json() == {
        "code": "INVALID_INPUT",
        "message": "topology: GPU1: node node-t has no gpu device at index 1",
    }


def test_a_gpu_reported_unhealthy_moves_the_booking_on_it_and_the_tenant_reads_why(
    as_operator, as_acme, lab, ask, django_capture_on_commit_callbacks
):
    """acme books 2 GPUs for the day after tomorrow; a report says one of them is unhealthy."""
    from datetime import UTC, datetime, timedelta

    start = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)
    body = {**ask(2), "during": {"start": start.isoformat(), "end": (start + timedelta(days=1)).isoformat()}}
    del body["duration"]
    booked = as_acme.post("/api/v1/reservations", body, format="json").json()
    [allocation] = booked["allocations"]
    node, broken = allocation["nodeId"], allocation["atoms"][1]
    devices = [
        {"uuid": f"GPU-{node}-{i}", "index": i, "healthy": f"GPU-{node}-{i}" != broken} for i in range(4)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = as_operator.post(f"/api/v1/nodes/{node}/report", {"devices": devices}, format="json")
    assert response.status_code == 200
    after = as_acme.get(f"/api/v1/reservations/{booked['id']}").json()
    assert after["status"] == "placed"
    live = [a for a in after["allocations"] if a["releasedAt"] is None]
    assert len(live) == 1 and broken not in live[0]["atoms"] and len(live[0]["atoms"]) == 2
    [condition] = after["conditions"]
    assert condition["type"] == "Repaired"
    assert condition["message"].endswith(f"{broken} unhealthy")
