"""The reference agent against a live Berth: it reports the box, writes who holds which GPU, and survives.

Boxes (tests/agent/conftest.py): h100-8 (8 whole GPUs), a100-mig (GPU 0 and 1 split into 11 slices),
l40s-4 (4 PCIe GPUs).
"""

from __future__ import annotations

import ast
import dataclasses
import http.server
import io
import json
import os
import socket
import subprocess
import threading
import time

import pytest
from agent_helpers import AGENT, FIXTURES, PYTHON
from django.core.management import call_command
from django.db import connection

from capacity import services
from capacity.conf import placer_config
from inventory.models import Device, DeviceLink, NodeImageCache, NodeReport


def book(node_gpus: list[dict], tenant="acme", duration="1d"):
    config = dataclasses.replace(placer_config(), random=None)
    data = {"tenantId": tenant, "poolId": "lab-pool", "devices": node_gpus, "duration": duration}
    reservation = services.reserve(data, config=config).reservation
    connection.close()  # the live server's threads see it committed; keep no connection across waits
    return reservation


def wait_for(check, seconds=20.0, log=None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {seconds} s" + (f"; the agent said:\n{log.read_text()}" if log else ""))


def feed_of(agent) -> dict:
    path = agent.output / "assignments.json"
    return json.loads(path.read_text()) if path.exists() else {}


def leftovers(output) -> list[str]:
    """Every file under the output folder that is not a finished one (the scratch folder empty)."""
    scratch = output / ".tmp"
    return sorted(os.listdir(scratch)) if scratch.exists() else []


def test_the_agent_is_one_file_of_python_3_9_with_a_help(tmp_path):
    ast.parse(AGENT.read_text(), feature_version=(3, 9))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(AGENT.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    assert imported <= {
        "__future__", "argparse", "configparser", "contextlib", "http", "json", "logging", "os", "shlex",
        "signal", "socket", "subprocess", "sys", "tempfile", "threading", "time", "typing", "urllib", "xml",
    }  # fmt: skip
    shown = subprocess.run([PYTHON, str(AGENT), "--help"], capture_output=True, text=True, timeout=30)
    assert shown.returncode == 0
    for flag in ("--config", "--url", "--token-file", "--interval", "--nvidia-smi", "--output", "--once"):
        assert flag in shown.stdout


def test_one_round_reports_the_h100_box_and_writes_the_assignments(node_agent):
    agent = node_agent("gpu-h100", "h100-8")
    ran = agent.once()
    assert ran.returncode == 0, ran.stderr
    gpus = Device.objects.filter(node__name="gpu-h100", parent=None)
    assert gpus.count() == 8 and all(g.attributes["productName"].startswith("NVIDIA H100") for g in gpus)
    assert DeviceLink.objects.filter(node__name="gpu-h100").count() == 28
    assert NodeReport.objects.get(node__name="gpu-h100").by == "node.gpu-h100"
    feed = json.loads((agent.output / "assignments.json").read_text())
    assert feed["node"] == "gpu-h100" and len(feed["devices"]) == 8
    assert agent.env_files() == {}

    held = book([{"class": "gpu", "count": 2}])
    again = agent.once()
    assert again.returncode == 0, again.stderr
    env = agent.env_files()
    assert list(env) == [str(held.pk)]
    uuids = sorted(
        Device.objects.filter(bookings__allocation__reservation=held).values_list("uuid", flat=True)
    )
    lines = dict(line.split("=", 1) for line in env[str(held.pk)].splitlines())
    assert sorted(lines["CUDA_VISIBLE_DEVICES"].split(",")) == uuids
    assert lines["NVIDIA_VISIBLE_DEVICES"] == lines["CUDA_VISIBLE_DEVICES"]
    assert lines["BERTH_RESERVATION_ID"] == str(held.pk) and lines["BERTH_TENANT_ID"] == "acme"
    assert leftovers(agent.output) == []


def test_a_mig_slice_is_handed_out_by_its_mig_uuid(node_agent):
    agent = node_agent("gpu-a100", "a100-mig")
    assert agent.once().returncode == 0
    assert Device.objects.filter(node__name="gpu-a100", parent__isnull=False).count() == 11
    held = book([{"class": "mig-1g.10gb", "count": 1}])
    assert agent.once().returncode == 0
    line = next(
        x for x in agent.env_files()[str(held.pk)].splitlines() if x.startswith("CUDA_VISIBLE_DEVICES=")
    )
    (uuid,) = line.removeprefix("CUDA_VISIBLE_DEVICES=").split(",")
    assert uuid.startswith("MIG-")
    assert Device.objects.get(uuid=uuid).device_class == "mig-1g.10gb"


def test_the_pcie_box_reports_no_nvlink_and_its_cached_images(node_agent, tmp_path):
    agent = node_agent("gpu-l40s", "l40s-4")
    images = tmp_path / "images"
    images.mkdir()
    for name in ("nvcr.io_nvidia_pytorch_24.05-py3", "ghcr.io_acme_trainer_v2", ".hidden"):
        (images / name).write_text("")
    assert agent.once("--images-dir", str(images)).returncode == 0
    assert Device.objects.filter(node__name="gpu-l40s").count() == 4
    assert not DeviceLink.objects.filter(node__name="gpu-l40s", rank="NV").exists()
    assert sorted(NodeImageCache.objects.filter(node__name="gpu-l40s").values_list("image", flat=True)) == [
        "ghcr.io_acme_trainer_v2",
        "nvcr.io_nvidia_pytorch_24.05-py3",
    ]


def test_a_running_agent_sees_a_booking_and_its_release_within_seconds(node_agent):
    agent = node_agent("gpu-h100", "h100-8")
    running = agent.start("--interval", "2", "--wait", "10", "--verbose")
    try:
        # The first report creates the GPUs; the feed then lists them (the first answer may precede it).
        wait_for(lambda: len(feed_of(agent).get("devices", [])) == 8, log=agent.log)
        t0 = time.monotonic()
        held = book([{"class": "gpu", "count": 8}])
        wait_for(lambda: str(held.pk) in agent.env_files(), log=agent.log)
        seen_after = time.monotonic() - t0
        services.release(held.pk)
        connection.close()
        wait_for(lambda: agent.env_files() == {}, log=agent.log)
    finally:
        err = agent.stop(running)
    assert running.returncode == 0, err
    assert seen_after < 5.0  # a long-poll answers within a poll or two of the commit
    assert "report taken" in err
    assert leftovers(agent.output) == []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_with_berth_away_the_agent_keeps_the_last_files_backs_off_and_says_so(node_agent):
    agent = node_agent("gpu-h100", "h100-8", url=f"http://127.0.0.1:{free_port()}")
    (agent.output / "reservations").mkdir(parents=True)
    (agent.output / "assignments.json").write_text('{"node": "gpu-h100", "devices": []}\n')
    (agent.output / "reservations" / "41.env").write_text("CUDA_VISIBLE_DEVICES=GPU-x\n")
    running = agent.start("--interval", "1", "--wait", "5")
    time.sleep(4.5)
    assert running.poll() is None  # still running
    err = agent.stop(running)
    assert "Berth unreachable at http://127.0.0.1:" in err and "keeping the last assignments" in err
    assert "retrying in 1 s" in err and "retrying in 2 s" in err
    assert agent.env_files() == {"41": "CUDA_VISIBLE_DEVICES=GPU-x\n"}
    assert json.loads((agent.output / "assignments.json").read_text())["node"] == "gpu-h100"


class BadBerth(http.server.BaseHTTPRequestHandler):
    """Answers every request with the next of `answers`: (status, body)."""

    answers: list[tuple[int, bytes]] = []

    def do_GET(self):
        self._answer()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer()

    def _answer(self):
        status, body = self.answers.pop(0) if self.answers else (200, b"{}")
        if status == 0:  # cut the connection without an answer
            self.close_connection = True
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{")
            return
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ((200, b"<html>proxy error</html>"), "bad assignments answer (the answer has no devices list)"),
        ((200, b'{"devices": "all"}'), "bad assignments answer (the answer has no devices list)"),
        (
            (200, b'{"devices": [{"uuid": "GPU-1", "now": {"reservationId": "../../etc/cron.d/x"}}]}'),
            "is not a plain name",
        ),
        ((502, b"<html>bad gateway</html>"), "assignments refused (502"),
        ((0, b""), "bad assignments answer"),  # cut short: what came is not JSON
    ],
)
def test_a_bad_answer_is_logged_and_leaves_the_last_files(node_agent, tmp_path, answer, said):
    BadBerth.answers = [(200, b'{"devices": 8}'), answer]  # the report's answer, then the feed's
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), BadBerth)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        agent = node_agent("gpu-h100", "h100-8", url=f"http://127.0.0.1:{server.server_address[1]}")
        (agent.output / "reservations").mkdir(parents=True)
        (agent.output / "reservations" / "7.env").write_text("CUDA_VISIBLE_DEVICES=GPU-7\n")
        ran = agent.once()
    finally:
        server.shutdown()
        server.server_close()
    assert ran.returncode == 1
    assert said in ran.stderr
    assert "Traceback" not in ran.stderr
    assert agent.env_files() == {"7": "CUDA_VISIBLE_DEVICES=GPU-7\n"}
    assert not (agent.output / "assignments.json").exists()


def test_malformed_xml_from_nvidia_smi_is_refused_with_the_reason_and_writes_nothing(node_agent, tmp_path):
    agent = node_agent("gpu-h100", "h100-8")
    broken = tmp_path / "broken"
    broken.mkdir()
    source = FIXTURES / "h100-8"
    (broken / "nvidia-smi-q.xml").write_text((source / "nvidia-smi-q.xml").read_text()[:5000])
    (broken / "nvidia-smi-L.txt").write_text((source / "nvidia-smi-L.txt").read_text())
    (broken / "topo-m.txt").write_text((source / "topo-m.txt").read_text())
    agent.smi.write_text(agent.smi.read_text().replace(str(source), str(broken)))
    ran = agent.once()
    assert ran.returncode == 1
    assert "report refused (400 INVALID_INPUT): nvidiaSmi.query" in ran.stderr
    assert not Device.objects.filter(node__name="gpu-h100").exists()
    assert not NodeReport.objects.filter(node__name="gpu-h100").exists()


def test_another_nodes_token_is_refused_and_the_agent_says_so(node_agent):
    mine = node_agent("gpu-h100", "h100-8")
    other = node_agent("gpu-l40s", "l40s-4")
    mine.token_file.write_text(other.token_file.read_text())
    ran = mine.once()
    assert ran.returncode == 1
    assert (
        "report refused (403 FORBIDDEN)" in ran.stderr and "assignments refused (403 FORBIDDEN)" in ran.stderr
    )
    assert not Device.objects.filter(node__name="gpu-h100").exists()


def test_a_missing_token_file_is_named_in_the_log(node_agent):
    agent = node_agent("gpu-h100", "h100-8")
    agent.token_file.unlink()
    ran = agent.once()
    assert ran.returncode == 1 and f"cannot read the token file {agent.token_file}" in ran.stderr


def people_token(username: str, *, operator: bool = False) -> str:
    """Return a person's key: a tenant user of acme, or an operator."""
    from django.contrib.auth.models import Group, User

    from identity.tokens import issue_token
    from inventory.models import Tenant

    user = User.objects.create_user(username=username)
    if operator:
        user.groups.add(Group.objects.get_or_create(name="operators")[0])
    else:
        Tenant.objects.get(slug="acme").users.add(user)
    return issue_token(user).key


def test_a_tenant_token_is_refused_with_how_to_issue_the_nodes_own(node_agent):
    agent = node_agent("gpu-h100", "h100-8")
    agent.token_file.write_text(people_token("alice") + "\n")
    ran = agent.once()
    assert ran.returncode == 1
    hint = "a node agent needs that credential: manage.py issue_token --node gpu-h100"
    assert "report refused (403 FORBIDDEN): only operators and node gpu-h100's own credential" in ran.stderr
    assert hint in ran.stderr and ran.stderr.count(hint) == 2  # the report and the assignments
    assert not Device.objects.filter(node__name="gpu-h100").exists()


def test_an_operators_token_is_refused_and_nothing_is_written(node_agent):
    agent = node_agent("gpu-h100", "h100-8")
    agent.token_file.write_text(people_token("olga", operator=True) + "\n")
    ran = agent.once()
    assert ran.returncode == 1
    assert (
        "report refused (403 FORBIDDEN): a node agent may not use an operator's token; give it node "
        "gpu-h100's own credential: manage.py issue_token --node gpu-h100"
    ) in ran.stderr
    assert "assignments refused (403 FORBIDDEN): a node agent may not use an operator's token" in ran.stderr
    assert not Device.objects.filter(node__name="gpu-h100").exists()
    assert not (agent.output / "assignments.json").exists()


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "berth.lab", "ftp://berth.lab", "http://"])
def test_a_url_without_a_scheme_stops_the_agent_at_once_saying_why(node_agent, url):
    agent = node_agent("gpu-h100", "h100-8", url=url)
    started = time.monotonic()
    ran = subprocess.run(agent.args(), capture_output=True, text=True, timeout=30)  # not --once: a daemon
    assert ran.returncode != 0 and time.monotonic() - started < 10
    assert "url must be Berth's address with its scheme, e.g. https://berth.example.org" in ran.stderr
    assert repr(url) in ran.stderr and "unreachable" not in ran.stderr


@pytest.mark.parametrize(
    "answer",
    [b"<!doctype html><title>Welcome to nginx!</title>", b"{}", b'{"status": "ok"}', b"[1, 2]"],
)
def test_a_200_that_is_not_berths_answer_to_a_report_is_said_so(node_agent, answer):
    BadBerth.answers = [(200, answer), (200, answer)]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), BadBerth)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        ran = node_agent("gpu-h100", "h100-8", url=url).once()
    finally:
        server.shutdown()
        server.server_close()
    assert ran.returncode == 1
    assert "report taken" not in ran.stderr
    assert (
        f"the answer to the report is not Berth's (200, {answer.decode()[:80]!r}): is {url} Berth's address?"
        in (ran.stderr)
    )
    assert "bad assignments answer" in ran.stderr and f"is {url} Berth's address?" in ran.stderr


def test_a_running_agent_whose_key_is_replaced_says_so_and_takes_the_new_key_from_its_file(node_agent):
    from identity.tokens import issue_node_token

    agent = node_agent("gpu-h100", "h100-8")
    running = agent.start("--interval", "1", "--wait", "2", "--verbose")
    try:
        wait_for(lambda: "report taken" in agent.log.read_text(), log=agent.log)
        fresh = issue_node_token("gpu-h100").key  # as POST /api/v1/nodes/gpu-h100/token does
        connection.close()
        wait_for(
            lambda: "no longer works: an operator issued node gpu-h100 a new one" in agent.log.read_text(),
            log=agent.log,
        )
        agent.token_file.write_text(fresh + "\n")
        taken = agent.log.read_text().count("report taken")
        wait_for(lambda: agent.log.read_text().count("report taken") > taken, seconds=30, log=agent.log)
    finally:
        log = agent.stop(running)
    assert "refused (401 " in log  # the report or the long-poll, whichever asked first
    assert f"Write the node's current key to {agent.token_file}" in log


def test_replace_lets_a_node_holding_other_gpus_take_the_fixture_box(node_agent):
    """As on a demo node: Berth holds 8 GPUs of its own; the fixture's 8 have other UUIDs."""
    agent = node_agent("demo-node", "h100-8", gpus=8)
    agent.smi = FIXTURES / "fake-nvidia-smi"  # the shipped script docs/agent.md points at
    args = ("--nvidia-smi", f"{FIXTURES / 'fake-nvidia-smi'} h100-8")
    refused = agent.once(*args)
    assert refused.returncode == 1
    assert "leaves out 8 of the node's 8 healthy devices" in refused.stderr
    assert "if the node's GPUs really were replaced, run the agent once with --replace" in refused.stderr
    taken = agent.once(*args, "--replace")
    assert taken.returncode == 0, taken.stderr
    assert "report taken: 8 devices (8 new, 8 marked unhealthy, 0 healthy again)" in taken.stderr
    healthy = Device.objects.filter(node__name="demo-node", healthy=True)
    assert healthy.count() == 8 and not healthy.filter(uuid__startswith="GPU-demo-node").exists()
    # New hardware on a node that had devices waits for an operator (docs/agent.md says to accept).
    assert "8 devices wait for an operator to accept them" in taken.stderr
    assert "manage.py accept_devices demo-node" in taken.stderr
    assert not healthy.filter(verified=True).exists()
    call_command("accept_devices", "demo-node", stdout=io.StringIO())
    assert healthy.filter(verified=True, bookable=True).count() == 8
    again = agent.once(*args)  # the old GPUs are unhealthy already: no replace needed any more
    assert again.returncode == 0 and "report taken: 8 devices (0 new, 0 marked unhealthy" in again.stderr
    held = book([{"class": "gpu", "count": 8}])
    assert agent.once(*args).returncode == 0
    assert list(agent.env_files()) == [str(held.pk)]


def test_spot_work_lent_an_idle_owners_gpus_is_held_beside_the_owner():
    import importlib.util

    spec = importlib.util.spec_from_file_location("berth_agent_lent", AGENT)
    agent = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agent)
    owner = {"reservationId": 7, "tenantId": "acme", "end": "2026-12-03T12:00:00Z"}
    spot = {"reservationId": 9, "tenantId": "globex", "priority": "spot", "end": "2026-12-02T16:00:00Z"}
    feed = {
        "devices": [
            {"uuid": "GPU-0", "parent": None, "now": owner, "lent": spot},
            {"uuid": "GPU-1", "parent": None, "now": owner, "lent": None},
        ]
    }
    held = agent.held_devices(feed)
    assert held["7"]["uuids"] == ["GPU-0", "GPU-1"]
    assert held["9"]["uuids"] == ["GPU-0"] and held["9"]["now"] == spot


class SlowBerth(http.server.BaseHTTPRequestHandler):
    """Takes every report; holds every assignments long-poll for a minute, as a quiet Berth does."""

    polls = threading.Event()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b'{"accepted": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.polls.set()
        time.sleep(60)

    def log_message(self, *args):
        pass


def test_sigterm_during_a_long_poll_stops_the_agent_within_two_seconds(node_agent):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowBerth)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        agent = node_agent("gpu-h100", "h100-8", url=f"http://127.0.0.1:{server.server_port}")
        running = agent.start("--interval", "30", "--wait", "55")
        assert SlowBerth.polls.wait(20), agent.log.read_text()
        time.sleep(0.5)  # well inside the poll's read
        t0 = time.monotonic()
        running.terminate()
        running.wait(timeout=15)
        took = time.monotonic() - t0
    finally:
        server.shutdown()
    assert running.returncode == 0, agent.log.read_text()
    assert took <= 2.0, f"stopped after {took:.1f} s"
