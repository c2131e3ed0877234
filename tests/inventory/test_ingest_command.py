"""manage.py import_topology: a matrix file, a JSON report or stdin, and its errors (database)."""

import io
import json
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connections
from ingest_helpers import gpu_report, make_node

from inventory.management.commands.import_topology import Command as ImportTopology
from inventory.models import DeviceLink

from topo_samples import DGX_H100, PCIE_TWO_SOCKETS

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("import_topology", *args, stdout=out)
    return out.getvalue().strip()


def test_command_imports_a_matrix_file(tmp_path):
    node = make_node()
    path = tmp_path / "topo.txt"
    path.write_text(DGX_H100)

    assert run("dgx-01", str(path)) == "node dgx-01: 28 links (28 NV), 8 devices"
    assert DeviceLink.objects.filter(node=node).count() == 28


def test_command_prints_a_json_summary(tmp_path):
    make_node()
    path = tmp_path / "topo.txt"
    path.write_text(PCIE_TWO_SOCKETS)

    summary = json.loads(run("dgx-01", str(path), "--json"))

    assert summary == {
        "node": "dgx-01",
        "kind": "topology",
        "links": 28,
        "linkRanks": {"PIX": 4, "PXB": 8, "SYS": 16},
        "devices": 8,
    }


def test_command_reads_a_json_report_from_stdin(monkeypatch):
    node = make_node(gpus=0)
    report = gpu_report("dgx-01", range(8), labels={"gpu.product": "H100-SXM5-80GB"}, topology=DGX_H100)
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(report)))

    line = run("dgx-01", "-")

    assert line == (
        "node dgx-01: 28 links (28 NV), 8 devices (8 new, 0 now healthy, 0 marked unhealthy),"
        " 1 label set, 0 removed"
    )
    assert node.devices.count() == 8
    assert DeviceLink.objects.filter(node=node).count() == 28


def test_command_reads_a_matrix_from_stdin(monkeypatch):
    make_node()
    monkeypatch.setattr(sys, "stdin", io.StringIO(PCIE_TWO_SOCKETS))

    assert run("dgx-01", "-") == "node dgx-01: 28 links (4 PIX, 8 PXB, 16 SYS), 8 devices"


def test_command_fails_with_not_found_for_an_unknown_node(tmp_path):
    path = tmp_path / "topo.txt"
    path.write_text(DGX_H100)

    with pytest.raises(CommandError, match=r"^NOT_FOUND: no node named 'nope'$") as caught:
        run("nope", str(path))

    assert caught.value.returncode == 2


def test_command_fails_with_invalid_input_for_an_unparsable_file(tmp_path):
    make_node()
    path = tmp_path / "topo.txt"
    path.write_text("GPU0 GPU1\ngarbage\n")

    with pytest.raises(CommandError, match=r"^INVALID_INPUT: line 2: row 'garbage'") as caught:
        run("dgx-01", str(path))

    assert caught.value.returncode == 2


def test_command_fails_with_not_found_for_a_missing_file(tmp_path):
    make_node()

    with pytest.raises(CommandError, match=r"^NOT_FOUND: no file"):
        run("dgx-01", str(tmp_path / "missing.txt"))


def test_command_line_prints_error_code_to_stderr_and_exits_2(tmp_path, monkeypatch, capsys):
    # run_from_argv closes every connection when done, which would end the test's transaction.
    monkeypatch.setattr(connections, "close_all", lambda: None)
    path = tmp_path / "topo.txt"
    path.write_text(DGX_H100)

    with pytest.raises(SystemExit) as caught:
        ImportTopology().run_from_argv(["manage.py", "import_topology", "nope", str(path)])

    assert caught.value.code == 2
    assert capsys.readouterr().err.strip() == "error: NOT_FOUND: no node named 'nope'"
