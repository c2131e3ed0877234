"""The node report as the agent sends it: nvidia-smi's own texts, cached images, and no writes when unchanged.

dgx: an empty node in lab-pool that reports the sample DGX H100 (8 GPUs, GPU 0 and 1 MIG-split into
4 and 7 slices, NV18 between every pair) from tests/inventory/fleet_samples/dgx-h100-01.
"""

from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from identity.tokens import issue_node_token
from inventory.models import Device, DeviceLink, Node, NodeImageCache, NodeReport, PoolGeneration

SAMPLE = Path(__file__).parents[1] / "inventory" / "fleet_samples" / "dgx-h100-01"


def smi(**replace):
    texts = {
        "query": (SAMPLE / "nvidia-smi-q.xml").read_text(),
        "list": (SAMPLE / "nvidia-smi-L.txt").read_text(),
        "topo": (SAMPLE / "topo-m.txt").read_text(),
    }
    texts.update(replace)
    return {key: value for key, value in texts.items() if value is not None}


@pytest.fixture
def dgx(make_node):
    return make_node("dgx", gpus=0, links=None)


@pytest.fixture
def agent(dgx):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_node_token('dgx').key}")
    return client


def report(client, body):
    return client.post("/api/v1/nodes/dgx/report", body, format="json")


def generation(node):
    row = PoolGeneration.objects.filter(pool_id=node.pool_id).first()
    return row.generation if row else None


def test_a_report_of_nvidia_smi_texts_creates_the_gpus_slices_and_links(agent, dgx):
    answer = report(agent, {"nvidiaSmi": smi()})
    assert answer.status_code == 200, answer.json()
    assert answer.json() == {
        "devices": 19,
        "created": 19,
        "markedUnhealthy": 0,
        "becameHealthy": 0,
        "labelsSet": 0,
        "labelsRemoved": 0,
        "links": 28,
        "images": None,
        "samples": 8,  # every GPU's utilization, memory and processes (slices have none of their own)
        "unverified": 0,
    }
    gpus = Device.objects.filter(node=dgx, parent=None).order_by("index")
    assert [g.index for g in gpus] == list(range(8))
    assert gpus[2].attributes["productName"] == "NVIDIA H100 80GB HBM3"
    assert gpus[2].attributes["vramGiB"] == 80
    assert Device.objects.filter(node=dgx, device_class="mig-1g.10gb").count() == 9
    assert set(DeviceLink.objects.filter(node=dgx).values_list("rank", "nvlinks")) == {("NV", 18)}
    assert NodeReport.objects.get(node=dgx).agent_at is not None


def test_a_report_that_repeats_the_stored_devices_writes_nothing_and_keeps_the_pools_generation(agent, dgx):
    assert (
        report(agent, {"nvidiaSmi": smi(), "images": ["nvcr.io/nvidia/pytorch:24.05-py3"]}).status_code == 200
    )
    before = generation(dgx)
    with CaptureQueriesContext(connection) as seen:
        again = report(agent, {"nvidiaSmi": smi(), "images": ["nvcr.io/nvidia/pytorch:24.05-py3"]})
    assert again.status_code == 200 and again.json()["created"] == 0
    writes = [
        q["sql"]
        for q in seen.captured_queries
        if q["sql"].split()[0] in ("INSERT", "UPDATE", "DELETE")
        and "inventory_nodereport" not in q["sql"]
        and "inventory_devicesample" not in q["sql"]  # this minute's utilization: new every report
        and "authtoken" not in q["sql"]
        and "capacity_apitoken" not in q["sql"]
    ]
    assert writes == []
    assert generation(dgx) == before


def test_operators_keys_in_a_devices_attributes_survive_the_agents_reports(agent, dgx):
    report(agent, {"nvidiaSmi": smi()})
    gpu = Device.objects.get(node=dgx, index=3, parent=None)
    gpu.attributes = {**gpu.attributes, "rack": "r7"}
    gpu.save(update_fields=["attributes"])
    report(agent, {"nvidiaSmi": smi()})
    gpu.refresh_from_db()
    assert gpu.attributes["rack"] == "r7" and gpu.attributes["productName"] == "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"nvidiaSmi": smi(query="<nvidia_smi_log><gpu id='0'>")},
            "nvidiaSmi.query",
        ),
        ({"nvidiaSmi": smi(), "devices": []}, "report: send devices or nvidiaSmi, not both"),
        ({"nvidiaSmi": {"quer": "x"}}, "nvidiaSmi.quer: unknown field (expected query, list, topo)"),
        ({"nvidiaSmi": {"query": 7}}, "nvidiaSmi.query: must be the text nvidia-smi printed"),
        ({"nvidiaSmi": smi(), "topology": "x"}, "topology: nvidiaSmi.topo already gives the topology"),
        ({"images": ["has space"]}, "images[0]: an image reference of at most 300 characters, no spaces"),
        (
            {"images": [{"image": "a", "state": "gone"}]},
            "images[0].state: must be one of pulling, ready, failed",
        ),
        ({"images": ["a", "a"]}, "images[1]: a is listed twice"),
        ({"images": ["x"] * 513}, "images: 513 images; a report lists at most 512"),
    ],
)
def test_a_bad_agent_report_is_refused_with_the_reason_and_writes_nothing(agent, dgx, body, message):
    answer = report(agent, body)
    assert answer.status_code == 400
    assert answer.json()["code"] == "INVALID_INPUT"
    assert answer.json()["message"].startswith(message), answer.json()["message"]
    assert not Device.objects.filter(node=dgx).exists()
    assert not NodeImageCache.objects.filter(node=dgx).exists()
    assert not NodeReport.objects.filter(node=dgx).exists()


def test_a_report_naming_another_nodes_gpu_is_a_conflict_and_writes_nothing(agent, dgx, make_node):
    other = make_node("other", gpus=0, links=None)
    Device.objects.create(node=other, uuid="GPU-c470858f-b360-587c-83e5-c376010a7032", index=0)
    answer = report(agent, {"nvidiaSmi": smi()})
    assert answer.status_code == 409 and answer.json()["code"] == "CONFLICT"
    assert "belongs to node other" in answer.json()["message"]
    assert not Device.objects.filter(node=dgx).exists()


def test_the_reported_images_are_the_nodes_cache_and_feed_the_image_cached_scorer(agent, dgx):
    body = {"images": ["nvcr.io/nvidia/pytorch:24.05-py3", {"image": "ghcr.io/x/y:1", "state": "pulling"}]}
    assert report(agent, body).json()["images"] == 2
    assert dict(NodeImageCache.objects.filter(node=dgx).values_list("image", "state")) == {
        "nvcr.io/nvidia/pytorch:24.05-py3": "ready",
        "ghcr.io/x/y:1": "pulling",
    }
    assert report(agent, {"images": ["ghcr.io/x/y:1"]}).json()["images"] == 1
    assert dict(NodeImageCache.objects.filter(node=dgx).values_list("image", "state")) == {
        "ghcr.io/x/y:1": "ready"
    }
    Node.objects.get(name="dgx")  # the node is untouched by its cache


def test_a_report_over_the_body_cap_is_413_and_writes_nothing(agent, dgx):
    padded = smi(query=(SAMPLE / "nvidia-smi-q.xml").read_text() + " " * (2_621_440 + 1))
    answer = report(agent, {"nvidiaSmi": padded})
    assert answer.status_code == 413
    assert answer.json() == {"code": "PAYLOAD_TOO_LARGE", "message": "the request body is too large"}
    assert not Device.objects.filter(node=dgx).exists()
    assert not NodeReport.objects.filter(node=dgx).exists()
