"""One GPU, the same attributes whichever way it arrives: the agent's nvidia-smi texts over the
node report, the report's `devices` form, or `import_fleet`; vramGiB is the size the GPU is sold with."""

import pytest
from rest_framework.test import APIClient
from smi_xml import gpu_uuid, smi_xml

from identity.tokens import issue_node_token
from inventory.canonical import gpu_model, marketed_gib
from inventory.fleet import FleetOptions, import_fleet
from inventory.fleet_files import NodeFiles
from inventory.models import Device

# (product as nvidia-smi names it, MiB it reports, MIG mode or None before R450, architecture,
#  gpuModel, vramGiB as sold)
FAMILIES = {
    "A10G": ("NVIDIA A10G", 23028, "N/A", "Ampere", "A10G", 24),
    "T4": ("Tesla T4", 15360, "N/A", "Turing", "T4", 16),
    "K80": ("Tesla K80", 11441, None, None, "K80", 12),
    "H100 80GB": ("NVIDIA H100 80GB HBM3", 81559, "Disabled", "Hopper", "H100", 80),
    "L40S": ("NVIDIA L40S", 46068, "N/A", "Ada Lovelace", "L40S", 48),
    "A100 40GB": ("NVIDIA A100-SXM4-40GB", 40960, "Disabled", "Ampere", "A100", 40),
}
CANONICAL = ("productName", "gpuProduct", "gpuModel", "vramMiB", "vramGiB")


def agent(name):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_node_token(name).key}")
    return client


def stored(node_name):
    return Device.objects.get(node__name=node_name).attributes


@pytest.mark.parametrize("family", FAMILIES)
def test_the_same_gpu_gets_the_same_attributes_from_the_agent_the_api_and_the_fleet_import(family, make_node):
    product, mib, mig, architecture, model, sold = FAMILIES[family]

    def xml():  # a GPU of its own for each path: a UUID belongs to one node
        return smi_xml(product, f"{mib} MiB", mig=mig, architecture=architecture)

    for name in ("by-agent", "by-api"):
        make_node(name, gpus=0, links=None)

    smi = agent("by-agent").post(
        "/api/v1/nodes/by-agent/report", {"nvidiaSmi": {"query": xml()}}, format="json"
    )
    assert smi.status_code == 200, smi.json()
    device = {"uuid": gpu_uuid(), "index": 0, "attributes": {"productName": product, "vramMiB": mib}}
    api = agent("by-api").post("/api/v1/nodes/by-api/report", {"devices": [device]}, format="json")
    assert api.status_code == 200, api.json()
    (fleet,) = import_fleet([NodeFiles(name="by-fleet", smi_q=xml())], FleetOptions(pool="lab-pool")).nodes
    assert fleet.status == "imported", fleet.message

    by_agent, by_api, by_fleet = stored("by-agent"), stored("by-api"), stored("by-fleet")
    assert by_agent == by_fleet
    assert {k: by_agent[k] for k in CANONICAL} == {k: by_api[k] for k in CANONICAL}
    assert (by_agent["gpuProduct"], by_agent["gpuModel"], by_agent["vramGiB"]) == (product, model, sold)


@pytest.mark.parametrize(
    ("mib", "product", "sold"),
    [
        (81920, "NVIDIA A100-SXM4-80GB", 80),
        (95830, "NVIDIA H100 NVL", 94),
        (11264, "NVIDIA GeForce RTX 2080 Ti", 11),
        (24564, "NVIDIA GeForce RTX 4090", 24),
        (32510, "Tesla V100-SXM2-32GB", 32),
        (0, "NVIDIA T4", 0),
    ],
)
def test_the_memory_reads_as_sold_for_other_products_too(mib, product, sold):
    assert marketed_gib(mib, product) == sold


@pytest.mark.parametrize(
    ("product", "model"),
    [
        ("NVIDIA GeForce RTX 4090", "RTX-4090"),
        ("NVIDIA RTX A6000", "RTX-A6000"),
        ("Quadro RTX 8000", "RTX-8000"),
    ],
)
def test_the_model_of_a_series_product_keeps_its_series_without_spaces(product, model):
    assert gpu_model(product) == model


def test_a_fleet_import_fails_the_node_whose_product_name_no_attribute_may_hold(db, pool):
    xml = smi_xml("NVIDIA " + "H" * 300)
    (node,) = import_fleet([NodeFiles(name="n1", smi_q=xml)], FleetOptions(pool="lab-pool")).nodes
    assert node.status == "failed" and node.code == "INVALID_INPUT"
    assert "n1/nvidia-smi-q.xml: GPU0 GPU-" in node.message
    assert "attributes.productName: must be at most 200 printable characters" in node.message
    assert not Device.objects.exists()
