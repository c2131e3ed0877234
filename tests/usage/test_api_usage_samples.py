"""Utilization in the node report: one sample a device a minute, and a reservation's usage from them.

lab: node-a and node-b, 4 GPUs each (GPU-node-a-0 … -3), in lab-pool.
"""

from pathlib import Path

import pytest

from inventory.models import DeviceSample

SAMPLE = Path(__file__).parents[1] / "inventory" / "fleet_samples" / "dgx-h100-01"


def busy(uuid, percent, processes=(), memory=1000):
    return {
        "uuid": uuid,
        "utilization": {
            "gpuPercent": percent,
            "memoryUsedMiB": memory,
            "processes": [{"pid": pid, "usedMiB": mib, "name": "python"} for pid, mib in processes],
        },
    }


def report(client, devices):
    return client.post("/api/v1/nodes/node-a/report", {"devices": devices}, format="json")


def all_four(**by_index):
    return [busy(f"GPU-node-a-{i}", *by_index.get(str(i), (0,))) for i in range(4)]


def test_each_report_is_one_sample_a_device_a_minute(as_operator, lab):
    assert report(as_operator, all_four()).json()["samples"] == 4
    assert report(as_operator, all_four(**{"0": (90, [(7, 4000)])})).status_code == 200
    assert DeviceSample.objects.count() == 4  # the same minute: replaced, not added
    first = DeviceSample.objects.get(device__uuid="GPU-node-a-0")
    assert (first.gpu_percent, first.processes, first.process_mib) == (90, 1, 4000)


@pytest.mark.parametrize(
    ("utilization", "message"),
    [
        ({"gpuPercent": 101}, "devices[0].utilization.gpuPercent: must be a number from 0 to 100, or null"),
        ({"gpuPercent": -1}, "devices[0].utilization.gpuPercent: must be a number from 0 to 100, or null"),
        ({"memoryUsedMiB": -5}, "devices[0].utilization.memoryUsedMiB: must be a whole number of MiB from 0"),
        (
            {"processes": [{"pid": i} for i in range(1000)]},
            "devices[0].utilization.processes: 1000 processes; at most 256",
        ),
        ({"processes": [{"pid": "x"}]}, "devices[0].utilization.processes[0].pid: must be a process id"),
        ({"gpuUtil": 5}, "devices[0].utilization.gpuUtil: unknown field"),
    ],
)
def test_bad_utilization_is_refused_and_nothing_is_written(as_operator, lab, utilization, message):
    answer = report(as_operator, [{"uuid": "GPU-node-a-0", "utilization": utilization}, *all_four()[1:]])
    assert answer.status_code == 400 and answer.json()["message"].startswith(message)
    assert not DeviceSample.objects.exists()


def test_a_utilization_outside_0_to_100_in_nvidia_smis_xml_is_refused_naming_the_line(as_operator, make_node):
    make_node("dgx", gpus=0, links=None)
    xml = (SAMPLE / "nvidia-smi-q.xml").read_text()
    bad = xml.replace("<gpu_util>0 %</gpu_util>", "<gpu_util>120 %</gpu_util>", 1)
    assert bad != xml
    body = {"nvidiaSmi": {"query": bad, "list": (SAMPLE / "nvidia-smi-L.txt").read_text()}}
    answer = as_operator.post("/api/v1/nodes/dgx/report", body, format="json")
    assert answer.status_code == 400
    assert "nvidiaSmi.query line " in answer.json()["message"]
    assert "'120 %' is not a utilization from 0 to 100 %" in answer.json()["message"]
    assert not DeviceSample.objects.exists()


def test_a_reservation_reads_its_gpus_utilization_so_far(as_operator, as_acme, lab, ask):
    held = as_acme.post("/api/v1/reservations", ask(2), format="json").json()
    assert held["usage"] is None
    atoms = held["allocations"][0]["atoms"]
    node = held["allocations"][0]["nodeId"]
    devices = [
        busy(uuid, pct, procs) for uuid, pct, procs in zip(atoms, (40, 60), ([(1, 9000)], []), strict=True)
    ]
    assert (
        as_operator.post(f"/api/v1/nodes/{node}/report", {"devices": devices}, format="json").status_code
        == 200
    )
    usage = as_acme.get(f"/api/v1/reservations/{held['id']}").json()["usage"]
    assert usage == {"gpuPercentMean": 50.0, "gpuPercentP95": 59.0, "minutesWithoutProcess": 0, "samples": 2}
    listed = as_acme.get("/api/v1/reservations").json()["results"]
    assert next(r for r in listed if r["id"] == held["id"])["usage"] == usage


def test_the_reservation_page_says_how_much_its_gpus_were_used(as_operator, as_acme, acme, lab, ask):
    from django.test import Client

    held = as_acme.post("/api/v1/reservations", ask(1), format="json").json()
    page = Client()
    page.force_login(acme)
    assert "no sample yet" in page.get(f"/reservations/{held['id']}/").text
    atom, node = held["allocations"][0]["atoms"][0], held["allocations"][0]["nodeId"]
    devices = [busy(f"GPU-{node}-{i}", 3 if f"GPU-{node}-{i}" == atom else 0) for i in range(4)]
    assert (
        as_operator.post(f"/api/v1/nodes/{node}/report", {"devices": devices}, format="json").status_code
        == 200
    )
    html = page.get(f"/reservations/{held['id']}/").text
    assert "3.0 % mean, 3.0 % at the 95th percentile over 1 device-minute; 1 minute with no process" in html
