"""POST /api/v1/fleet/import: many nodes at once, through the service import_fleet uses."""

import json
import sys
from pathlib import Path

import pytest

from inventory.models import Device, DeviceLink, Node

sys.path.insert(0, str(Path(__file__).parents[1] / "inventory"))
from fleet_helpers import node_files

URL = "/api/v1/fleet/import"


def node_body(name: str, sample: str = "dgx-a100-01", **override) -> dict:
    files = node_files(sample, name)
    body = {
        "name": name,
        "smiQ": files["nvidia-smi-q.xml"],
        "smiL": files["nvidia-smi-L.txt"],
        "topo": files["topo-m.txt"],
    }
    return {**body, **override}


def post(client, body):
    return client.post(URL, body, format="json")


def test_an_operator_imports_many_nodes_and_reads_each_result(as_operator, pool):
    nodes = [node_body(f"api-{n}") for n in range(3)] + [node_body("api-h100", "dgx-h100-01")]

    response = post(as_operator, {"pool": "lab-pool", "nodes": nodes})

    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["dryRun"], data["imported"], data["failed"], data["summary"]) == (
        False,
        4,
        0,
        "imported 4 nodes",
    )
    first = data["nodes"][0]
    assert (first["name"], first["status"], first["diff"]["node"], first["diff"]["pool"]) == (
        "api-0",
        "imported",
        "added",
        "lab-pool",
    )
    assert len(first["diff"]["devices"]["added"]) == 8 and len(first["diff"]["links"]["added"]) == 28
    assert Node.objects.filter(name__startswith="api-").count() == 4
    assert Device.objects.filter(node__name="api-h100").exclude(parent=None).count() == 11
    assert DeviceLink.objects.filter(node__name="api-2").count() == 28


def test_a_dry_run_answers_the_diff_and_stores_nothing(as_operator, pool):
    response = post(as_operator, {"pool": "lab-pool", "dryRun": True, "nodes": [node_body("api-0")]})

    assert response.status_code == 200
    assert response.json()["summary"] == "dry run: would import 1 node; nothing stored"
    assert response.json()["nodes"][0]["status"] == "would import"
    assert response.json()["nodes"][0]["diff"]["links"]["added"][0] == "+ GPU0-GPU1 NV12"
    assert not Node.objects.filter(name="api-0").exists()


def test_a_bad_node_fails_alone_naming_field_line_and_cell(as_operator, pool):
    bad = node_body("api-7")
    bad["topo"] = bad["topo"].replace("GPU2\tNV12\tNV12\t X \tNV12", "GPU2\tNV12\tNV12\t X \tNV19x", 1)

    response = post(as_operator, {"pool": "lab-pool", "nodes": [node_body("api-1"), bad]})

    assert response.status_code == 200
    data = response.json()
    assert (data["imported"], data["failed"]) == (1, 1)
    assert data["nodes"][1] == {
        "name": "api-7",
        "status": "failed",
        "code": "INVALID_INPUT",
        "message": "api-7.topo line 4, column GPU3: 'NV19x' is not a link type (expected X, NV#, PIX, PXB, PHB, NODE or SYS)",
    }
    assert data["summary"].startswith("imported 1 node, 1 failed: api-7 (api-7.topo line 4, column GPU3")
    assert not Node.objects.filter(name="api-7").exists()


def test_replace_devices_and_keep_numa_are_asked_for_in_the_body(as_operator, pool):
    post(as_operator, {"pool": "lab-pool", "nodes": [node_body("api-0")]})
    four = node_body("api-0", smiQ=None, smiL=None)
    four["topo"] = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\tN/A\nGPU1\tNV4\t X \t0-7\tN/A\n"
    )

    refused = post(as_operator, {"nodes": [four]}).json()["nodes"][0]
    done = post(as_operator, {"replaceDevices": True, "keepNuma": True, "nodes": [four]}).json()["nodes"][0]

    assert refused["message"].startswith(
        "api-0.topo: the matrix has 2 GPUs, node api-0 has 8 (GPU2, GPU3, GPU4, GPU5, GPU6, GPU7 not in the file); nothing was changed."
    )
    assert done["status"] == "imported"
    assert len(done["diff"]["devices"]["removed"]) == 6
    assert list(
        Device.objects.filter(node__name="api-0", healthy=True).values_list("numa_node", flat=True)
    ) == [3, 3]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "the request must be a JSON object"),
        ({"nodes": []}, "nodes must be a list of 1 to 64 nodes"),
        ({"nodes": [{"name": "n"}] * 65}, "nodes must be a list of 1 to 64 nodes"),
        (
            {"nodes": [{"name": "n"}], "dryrun": True},
            "unknown field 'dryrun' (expected dryRun, keepNuma, nodes, pool, replaceDevices)",
        ),
        (
            {"nodes": [{"name": "n", "smiq": ""}]},
            "nodes[0].smiq: unknown field (expected name, smiQ, smiL, topo)",
        ),
        ({"nodes": [{"name": 7}]}, "nodes[0].name must be a string"),
        (
            {"nodes": [{"name": "../etc"}]},
            "nodes[0].name: '../etc' is not a node name (letters, digits, '.', '_' and '-', starting with a "
            "letter or digit, at most 200 characters)",
        ),
        ({"nodes": [{"name": "a"}, {"name": "a"}]}, "nodes[1].name: a is listed twice"),
        (
            {"nodes": [{"name": "a", "topo": 42}]},
            "nodes[0].topo must be the text nvidia-smi printed, or null",
        ),
        ({"nodes": [{"name": "a"}], "dryRun": "yes"}, "dryRun must be true or false"),
        ({"nodes": [{"name": "a"}], "pool": 3}, "pool must be a pool slug or null"),
    ],
)
def test_a_malformed_request_is_refused_whole(as_operator, pool, body, message):
    response = post(as_operator, body)

    assert response.status_code == 400
    assert response.json() == {"code": "INVALID_INPUT", "message": message}
    assert not Node.objects.exists()


def test_an_unknown_pool_is_not_found(as_operator, pool):
    response = post(as_operator, {"pool": "nope", "nodes": [node_body("api-0")]})

    assert (response.status_code, response.json()) == (404, {"code": "NOT_FOUND", "message": "no pool nope"})


def test_a_body_over_the_limit_is_413(as_operator, pool, monkeypatch):
    monkeypatch.setattr("inventory.api.fleet.MAX_BODY_BYTES", 1000)

    response = as_operator.post(
        URL, json.dumps({"nodes": [node_body("api-0")]}), content_type="application/json"
    )

    assert response.status_code == 413
    assert response.json()["code"] == "PAYLOAD_TOO_LARGE"


def test_a_body_larger_than_djangos_upload_limit_is_read_up_to_the_fleet_limit(as_operator, pool, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    nodes = [node_body(f"api-{n}") for n in range(2)]

    response = as_operator.post(
        URL, json.dumps({"pool": "lab-pool", "nodes": nodes}), content_type="application/json"
    )

    assert response.status_code == 200, response.content
    assert response.json()["summary"] == "imported 2 nodes"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('{"nodes": [{"name": "a", "topo": NaN}]}', "JSON parse error - NaN is not valid JSON"),
        ('{"nodes": [', "JSON parse error - Expecting value"),
        ('{"nodes": [{"name": "a\\u0000"}]}', "nodes[0].name: strings must not contain NUL characters"),
        ("[" * 100 + "]" * 100, "nested more than 32 levels deep"),
    ],
)
def test_bad_json_is_invalid_input(as_operator, pool, raw, message):
    response = as_operator.post(URL, raw, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"
    assert message in response.json()["message"]


def test_only_operators_may_import(as_acme, anonymous, pool):
    body = {"pool": "lab-pool", "nodes": [node_body("api-0")]}

    assert post(as_acme, body).status_code == 403
    assert post(anonymous, body).status_code == 401
    assert not Node.objects.exists()


def test_a_node_name_with_a_trailing_newline_is_refused(as_operator, pool):
    response = post(as_operator, {"pool": "lab-pool", "nodes": [node_body("ams1-dgx-05\n")]})

    assert response.status_code in (200, 400), response.content
    assert not Node.objects.filter(name__startswith="ams1-dgx-05").exists()
    text = json.dumps(response.json())
    assert "is not a node name" in text
