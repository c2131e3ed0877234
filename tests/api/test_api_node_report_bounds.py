"""What a node may say of its devices, over the public node report: typed attributes and bounded numbers.

Every refusal is a 400 INVALID_INPUT naming the field (and the device), with nothing written.
"""

import json
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from identity.tokens import issue_node_token
from inventory.models import Device, DeviceSample

sys.path.insert(0, str(Path(__file__).parents[1] / "inventory"))
from smi_xml import gpu_uuid, process, smi_xml

UUID = "GPU-node-n-0"


@pytest.fixture
def node(make_node):
    return make_node("n", gpus=0, links=None)


@pytest.fixture
def agent(node):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_node_token('n').key}")
    return client


def refused(agent, body) -> str:
    answer = agent.post("/api/v1/nodes/n/report", body, format="json")
    assert answer.status_code == 400, answer.content[:300]
    assert answer.json()["code"] == "INVALID_INPUT"
    assert not Device.objects.exists() and not DeviceSample.objects.exists()
    return answer.json()["message"]


def with_attributes(attributes) -> dict:
    return {"devices": [{"uuid": UUID, "index": 0, "attributes": attributes}]}


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        (
            {"vramGiB": {"a": 1}},
            "devices[0].attributes.vramGiB: must be a whole number (device GPU-node-n-0)",
        ),
        ({"vramGiB": "80"}, "devices[0].attributes.vramGiB: must be a whole number"),
        ({"vramGiB": 80.5}, "devices[0].attributes.vramGiB: must be a whole number"),
        ({"vramGiB": 10**9}, "devices[0].attributes.vramGiB: must be from 0 to 16384"),
        ({"migCapable": "true"}, "devices[0].attributes.migCapable: must be true or false"),
        ({"migMode": "on"}, "devices[0].attributes.migMode: must be one of enabled, disabled, n/a"),
        ({"gpuProduct": 7}, "devices[0].attributes.gpuProduct: must be a string"),
        ({"productName": "H" * 201}, "devices[0].attributes.productName: must be at most 200 printable"),
        ({"productName": "H100\u202e"}, "devices[0].attributes.productName: must be at most 200 printable"),
        ({"rack": "r7\nx"}, "devices[0].attributes.rack: must be at most 200 printable"),
        ({"rack": ["r7"]}, "devices[0].attributes.rack: must be a string, a number or a boolean"),
        ({"rack": None}, "devices[0].attributes.rack: must be a string, a number or a boolean"),
        ({"rack": "x" * 2_400_000}, "devices[0].attributes.rack: must be at most 200 printable"),
        ({"9lives": 1}, "devices[0].attributes.'9lives': keys start with a letter"),
        ({f"k{i}": i for i in range(65)}, "devices[0].attributes: 65 keys; at most 64 per device"),
    ],
)
def test_an_attribute_of_the_wrong_type_or_past_its_bounds_is_refused_naming_device_and_key(
    agent, attributes, message
):
    assert refused(agent, with_attributes(attributes)).startswith(message)


def test_unknown_scalar_attributes_are_kept_and_known_ones_canonical(agent):
    attributes = {"rack": "r7", "tdpWatts": 700.0, "nvlinkCapable": True, "vramGiB": 80.0}
    answer = agent.post("/api/v1/nodes/n/report", with_attributes(attributes), format="json")
    assert answer.status_code == 200, answer.json()
    assert Device.objects.get().attributes == {**attributes, "vramGiB": 80}


def test_a_product_name_nvidia_smi_printed_too_long_is_refused_naming_the_gpu(agent):
    uuid = gpu_uuid()
    message = refused(agent, {"nvidiaSmi": {"query": smi_xml("NVIDIA " + "H" * 300, uuid=uuid)}})
    assert message.startswith(f"nvidiaSmi.query: GPU0 {uuid}: attributes.productName: must be at most 200")


def test_processes_using_more_than_two_to_the_31_mib_in_all_are_refused(agent):
    busy = {"gpuPercent": 90, "processes": [{"pid": p, "usedMiB": 15_000_000} for p in range(200)]}
    message = refused(agent, {"devices": [{"uuid": UUID, "index": 0, "utilization": busy}]})
    assert message.startswith("devices[0].utilization.processes: the processes use 3,000,000,000 MiB in all")


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        (
            smi_xml(processes=process(used_memory=f"{'9' * 30} MiB")),
            "element gpu/processes/process_info/used_memory: a 30-digit number of MiB is more than any GPU has",
        ),
        (
            smi_xml(processes=process(used_memory="15000000 MiB") * 200),
            "element gpu/processes: the processes use 3,000,000,000 MiB in all",
        ),
        (smi_xml(total=f"{'9' * 400} MiB"), "element gpu/fb_memory_usage/total: a 400-digit number of MiB"),
        (
            smi_xml(total=f"{'9' * 5000} MiB"),
            "element gpu/fb_memory_usage/total: a 5,000-digit number of MiB",
        ),
        (smi_xml(used=f"{'9' * 5000} MiB"), "element gpu/fb_memory_usage/used: a 5,000-digit number of MiB"),
        (smi_xml(util=f"{'9' * 5000} %"), "element gpu/utilization/gpu_util"),
        (smi_xml(processes=process(pid="9" * 5000)), "element gpu/processes/process_info/pid"),
        (smi_xml(processes=process(pid="²")), "element gpu/processes/process_info/pid"),
    ],
    # Named ids: the XML holds a random GPU UUID, and pytest-xdist's workers must collect the same ids.
    ids=[
        "used-memory-30-digits",
        "processes-use-too-much",
        "total-400-digits",
        "total-5000-digits",
        "used-5000-digits",
        "util-5000-digits",
        "pid-5000-digits",
        "pid-superscript-two",
    ],
)
def test_numbers_in_nvidia_smi_xml_are_bounded_before_int_and_the_database(agent, xml, message):
    assert message in refused(agent, {"nvidiaSmi": {"query": xml}})


def test_a_gpu_index_of_five_thousand_digits_in_nvidia_smi_l_is_refused(agent):
    listed = f"GPU {'9' * 5000}: NVIDIA H100 80GB HBM3 (UUID: {gpu_uuid()})\n"
    assert refused(agent, {"nvidiaSmi": {"list": listed}}).startswith("nvidiaSmi.list line 1: not a line")


def test_a_link_count_of_five_thousand_digits_in_the_topology_is_refused(agent):
    topo = f"\tGPU0\tGPU1\nGPU0\t X \tNV{'9' * 5000}\nGPU1\tNV{'9' * 5000}\t X \n"
    assert "NV counts at most" in refused(agent, {"topology": topo})


def test_import_topology_report_checks_attributes_the_same_way(node, tmp_path):
    report = tmp_path / "report.json"
    report.write_text(json.dumps(with_attributes({"vramGiB": float("nan")})))  # json.loads takes NaN
    with pytest.raises(CommandError) as error:
        call_command("import_topology", "n", str(report))
    assert "devices[0].attributes.vramGiB: must be a whole number" in str(error.value)
    assert not Device.objects.exists()


def test_a_mig_split_gpu_without_its_list_says_to_send_nvidia_smi_l_as_nvidia_smi_list(agent):
    xml = smi_xml(mig="Enabled").replace("<processes>", "<mig_devices><mig_device/></mig_devices><processes>")
    message = refused(agent, {"nvidiaSmi": {"query": xml}})
    assert "send what `nvidia-smi -L` prints as nvidiaSmi.list" in message
    assert "run `nvidia-smi -L` there to see why it fails" in message
