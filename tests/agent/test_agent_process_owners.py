"""The agent says whose the GPUs' processes are (BERTH_RESERVATION_ID in each one's environment), and
Berth takes lent GPUs back when their owner's process shows up."""

import dataclasses
import http.server
import json
import os
import shutil
import threading

import pytest
from agent_helpers import FIXTURES, fake_smi
from django.db import connection
from test_berth_agent import book

from capacity import services
from capacity.conf import placer_config
from capacity.models import DeviceBooking, Reservation
from capacity.models.reservations import IDLE
from inventory.models import DeviceSample, Pool
from policy.models import PoolPolicy

PROCESS = (
    "<process_info><gpu_instance_id>N/A</gpu_instance_id><compute_instance_id>N/A</compute_instance_id>"
    "<pid>{pid}</pid><type>C</type><process_name>python</process_name>"
    "<used_memory>1024 MiB</used_memory></process_info>"
)


def run_on(agent, tmp_path, uuid, pid):
    """Make the fake nvidia-smi show process `pid` on the GPU `uuid`."""
    box = tmp_path / "box"
    shutil.rmtree(box, ignore_errors=True)
    shutil.copytree(FIXTURES / "h100-8", box)
    query = box / "nvidia-smi-q.xml"
    text = query.read_text()
    at = text.index(f"<uuid>{uuid}</uuid>")
    opening = text.index("<processes>", at) + len("<processes>")
    query.write_text(text[:opening] + PROCESS.format(pid=pid) + text[opening:])
    fake_smi(agent.smi.parent, box)


def spot(gpus):
    config = dataclasses.replace(placer_config(), random=None)
    data = {"tenantId": "globex", "poolId": "lab-pool", "devices": [{"class": "gpu", "count": gpus}]}
    reservation = services.reserve({**data, "duration": "4h", "priority": "spot"}, config=config).reservation
    connection.close()
    return reservation


def environ(proc, pid, **variables):
    folder = proc / str(pid)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "environ").write_bytes(b"".join(f"{k}={v}\0".encode() for k, v in variables.items()))


def test_the_owners_process_on_a_lent_gpu_takes_the_lent_work_back(node_agent, other_tenant, tmp_path):
    agent = node_agent("gpu-h100", "h100-8")
    proc = tmp_path / "proc"
    proc.mkdir()
    assert agent.once("--proc", str(proc)).returncode == 0
    PoolPolicy.objects.create(pool=Pool.objects.get(slug="lab-pool"), lend_idle=True)
    owner = book([{"class": "gpu", "count": 8}])
    idle = {"type": IDLE, "status": "True", "reason": "LowUtilization", "message": "0 %"}
    Reservation.objects.filter(pk=owner.pk).update(conditions=[idle])
    work = spot(1)
    [lent] = DeviceBooking.objects.filter(layer=1).values_list("device__uuid", flat=True)
    connection.close()
    assert agent.once("--proc", str(proc)).returncode == 0  # writes both env files
    assert {str(owner.pk), str(work.pk)} <= set(agent.env_files())

    # The lent work's own process: attributed to it, nothing taken back.
    run_on(agent, tmp_path, lent, 4242)
    environ(proc, 4242, PATH="/usr/bin", BERTH_RESERVATION_ID=work.pk)
    ran = agent.once("--proc", str(proc))
    assert ran.returncode == 0, ran.stderr
    assert Reservation.objects.get(pk=work.pk).status == "placed"
    owners = DeviceSample.objects.filter(device__uuid=lent).values_list("process_owners", flat=True)
    assert list(owners) == [[work.pk]]
    connection.close()

    # The owner's process shows up on it: the lent work is taken back before the report answers.
    environ(proc, 4242, BERTH_RESERVATION_ID=owner.pk)
    ran = agent.once("--proc", str(proc))
    assert ran.returncode == 0, ran.stderr
    taken = Reservation.objects.get(pk=work.pk)
    assert taken.status == "preempted" and taken.conditions[0]["cause"] == "processes"
    assert Reservation.objects.get(pk=owner.pk).condition(IDLE) is None
    assert str(work.pk) not in agent.env_files()  # the owner's GPUs are its own alone again
    connection.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every environment")
def test_an_agent_that_may_not_read_environments_attributes_nothing(node_agent, tmp_path):
    agent = node_agent("gpu-h100", "h100-8")
    assert agent.once().returncode == 0
    uuid = "GPU-5a486531-0201-53e0-8d81-d544bb08d0dc"
    run_on(agent, tmp_path, uuid, 4242)
    proc = tmp_path / "proc"
    environ(proc, 4242, BERTH_RESERVATION_ID=1)
    (proc / "4242" / "environ").chmod(0)
    ran = agent.once("--proc", str(proc))
    assert ran.returncode == 0, ran.stderr
    assert "cannot read the GPU processes' environments" in ran.stderr
    samples = DeviceSample.objects.filter(device__uuid=uuid).order_by("-minute")
    assert samples.values_list("process_owners", flat=True)[0] is None
    connection.close()


class OlderBerth(http.server.BaseHTTPRequestHandler):
    """A Berth from before processOwners: it refuses the field as an unknown one, takes the rest."""

    bodies: list[dict] = []

    def log_message(self, *args):
        pass

    def _answer(self, status: int, body: dict) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        OlderBerth.bodies.append(body)
        if "processOwners" in body:
            message = "report: unknown field 'processOwners' (expected devices, nvidiaSmi, labels, topology)"
            self._answer(400, {"code": "INVALID_INPUT", "message": message})
        else:
            self._answer(200, {"devices": 8, "created": 0, "markedUnhealthy": 0, "becameHealthy": 0})

    def do_GET(self):
        self._answer(200, {"node": "gpu-h100", "asOf": "2026-12-05T10:00:00Z", "devices": []})


def test_an_older_berth_that_refuses_process_owners_gets_the_report_without_them(node_agent, tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), OlderBerth)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        agent = node_agent("gpu-h100", "h100-8", url=f"http://127.0.0.1:{server.server_address[1]}")
        ran = agent.once("--proc", str(tmp_path))
    finally:
        server.shutdown()
    assert ran.returncode == 0, ran.stderr
    assert "Berth does not take processOwners; reporting without them from now on" in ran.stderr
    assert ["processOwners" in body for body in OlderBerth.bodies] == [True, False]
