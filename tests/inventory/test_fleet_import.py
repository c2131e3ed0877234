"""manage.py import_fleet and the fleet import service: what an import writes (database)."""

import io
import tarfile

import pytest
from django.core.management import call_command
from fleet_helpers import copy_samples, node_files, refused, run, write_node

from inventory.fleet import FleetOptions, import_fleet
from inventory.fleet_files import NodeFiles, read_fleet
from inventory.models import Device, DeviceLink, Node, Pool

pytestmark = pytest.mark.django_db


def test_dry_run_prints_each_nodes_diff_and_stores_nothing(tmp_path, h100_pool):
    out = run(str(copy_samples(tmp_path)), "--pool", "h100-prod", "--dry-run")

    lines = out.splitlines()
    assert lines[0] == (
        "dgx-a100-01 (new node in pool h100-prod): devices: 8 added, 0 changed, 0 removed; "
        "links: 28 added, 0 changed, 0 removed"
    )
    assert (
        "  + GPU0 GPU-6aa99d2c-efc1-5701-9850-2e9bab510762 (NVIDIA A100-SXM4-80GB, 80 GiB, NUMA 3)" in lines
    )
    assert "  + GPU0-GPU1 NV12" in lines
    assert (
        "dgx-h100-01 (new node in pool h100-prod): devices: 19 added, 0 changed, 0 removed; "
        "links: 28 added, 0 changed, 0 removed"
    ) in lines
    assert any(
        line.startswith("  + GPU0/MIG0 MIG-2844d289-b552-5090-93bd-141b0fe67670 (mig-3g.40gb")
        for line in lines
    )
    assert lines[-1] == "dry run: would import 2 nodes; nothing stored"
    assert not Node.objects.exists() and not Device.objects.exists()


def test_import_creates_nodes_gpus_mig_slices_links_and_numa(tmp_path, h100_pool):
    out = run(str(copy_samples(tmp_path)), "--pool", "h100-prod")

    assert out.splitlines()[-1] == "imported 2 nodes"
    h100 = Node.objects.get(name="dgx-h100-01")
    assert h100.pool == h100_pool
    gpus = list(h100.devices.filter(parent=None).order_by("index"))
    assert [g.index for g in gpus] == list(range(8))
    assert [g.numa_node for g in gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert gpus[0].uuid == "GPU-c470858f-b360-587c-83e5-c376010a7032"
    assert gpus[0].attributes == {
        "gpuProduct": "NVIDIA H100 80GB HBM3",
        "gpuModel": "H100",
        "productName": "NVIDIA H100 80GB HBM3",
        "architecture": "hopper",
        "migCapable": True,
        "migMode": "enabled",
        "pciBusId": "00000000:18:00.0",
        "vramGiB": 80,
        "vramMiB": 81559,
    }
    slices = list(h100.devices.exclude(parent=None).order_by("parent__index", "index"))
    assert [(s.parent.index, s.index, s.device_class) for s in slices[:4]] == [
        (0, 0, "mig-3g.40gb"),
        (0, 1, "mig-2g.20gb"),
        (0, 2, "mig-1g.10gb"),
        (0, 3, "mig-1g.10gb"),
    ]
    assert len(slices) == 11
    assert {s.numa_node for s in slices} == {0}
    assert slices[0].attributes == {
        "gpuProduct": "NVIDIA H100 80GB HBM3",
        "gpuModel": "H100",
        "productName": "NVIDIA H100 80GB HBM3",
        "architecture": "hopper",
        "migProfile": "3g.40gb",
        "vramGiB": 40,
    }
    assert DeviceLink.objects.filter(node=h100, rank="NV", nvlinks=18).count() == 28
    a100 = Node.objects.get(name="dgx-a100-01")
    assert list(a100.devices.order_by("index").values_list("numa_node", flat=True)) == [
        3,
        3,
        1,
        1,
        7,
        7,
        5,
        5,
    ]
    assert DeviceLink.objects.filter(node=a100, rank="NV", nvlinks=12).count() == 28


def test_a_second_import_of_the_same_files_changes_nothing(tmp_path, h100_pool):
    path = str(copy_samples(tmp_path))
    run(path, "--pool", "h100-prod")
    links = list(DeviceLink.objects.order_by("pk").values_list("pk", flat=True))

    out = run(path, "--dry-run")

    assert (
        "dgx-h100-01 (node in pool h100-prod): devices: 0 added, 0 changed, 0 removed; links: 0 added, 0 changed, 0 removed"
        in out
    )
    assert run(path).splitlines()[-1] == "imported 2 nodes"
    assert list(DeviceLink.objects.order_by("pk").values_list("pk", flat=True)) == links


@pytest.mark.parametrize("wrapped", [False, True], ids=["contents", "one-top-directory"])
def test_a_tar_file_imports_like_the_directory(tmp_path, h100_pool, wrapped):
    fleet = copy_samples(tmp_path / "fleet")
    archive = tmp_path / "fleet.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(fleet, arcname="fleet" if wrapped else ".")

    assert run(str(archive), "--pool", "h100-prod").splitlines()[-1] == "imported 2 nodes"
    assert Device.objects.filter(node__name="dgx-h100-01").count() == 19


def test_a_gpu_count_that_differs_from_the_nodes_is_refused_unless_replace_devices(tmp_path, h100_pool):
    write_node(tmp_path, "n1")
    run(str(tmp_path), "--pool", "h100-prod")
    xml = (tmp_path / "n1" / "nvidia-smi-q.xml").read_text()
    last = xml.rindex("\t<gpu id=")
    seven = xml[:last] + xml[xml.index("</gpu>", last) + len("</gpu>\n") :]
    (tmp_path / "n1" / "nvidia-smi-q.xml").write_text(seven.replace("<attached_gpus>8", "<attached_gpus>7"))
    listed = (tmp_path / "n1" / "nvidia-smi-L.txt").read_text().splitlines()
    (tmp_path / "n1" / "nvidia-smi-L.txt").write_text("\n".join(listed[:7]) + "\n")
    (tmp_path / "n1" / "topo-m.txt").unlink()

    out, _ = refused(str(tmp_path))

    assert (
        "n1: failed: n1/nvidia-smi-q.xml: lists 7 GPUs, node n1 has 8 (GPU7 not in the file); nothing was "
        "changed. If the node really changed, run again with --replace-devices"
    ) in out
    assert not Device.objects.filter(healthy=False).exists()

    out = run(str(tmp_path), "--replace-devices", "--dry-run")
    assert any(
        line.startswith("  - GPU7 GPU-") and "marked unhealthy, kept for its bookings" in line
        for line in out.splitlines()
    )

    run(str(tmp_path), "--replace-devices")
    assert list(Device.objects.filter(healthy=False).values_list("index", flat=True)) == [7]
    assert Device.objects.count() == 8


def test_numa_the_matrix_does_not_give_is_cleared_and_said_unless_keep_numa(tmp_path, h100_pool):
    write_node(tmp_path, "n1")
    run(str(tmp_path), "--pool", "h100-prod")
    topo = (tmp_path / "n1" / "topo-m.txt").read_text()
    (tmp_path / "n1" / "topo-m.txt").write_text(topo.replace("\t3\t\tN/A", "\tN/A\t\tN/A"))

    out = run(str(tmp_path), "--dry-run")

    assert any(
        line.startswith("  ~ GPU0 GPU-")
        and line.endswith(": numaNode 3 → none (n1/topo-m.txt gives none; --keep-numa keeps it)")
        for line in out.splitlines()
    )
    run(str(tmp_path), "--keep-numa")
    assert list(Device.objects.order_by("index").values_list("numa_node", flat=True)) == [
        3,
        3,
        1,
        1,
        7,
        7,
        5,
        5,
    ]
    run(str(tmp_path))
    assert list(Device.objects.order_by("index").values_list("numa_node", flat=True)) == [
        None,
        None,
        1,
        1,
        7,
        7,
        5,
        5,
    ]


def test_a_replaced_gpu_is_added_and_the_old_one_marked_unhealthy(tmp_path, h100_pool):
    write_node(tmp_path, "n1")
    run(str(tmp_path), "--pool", "h100-prod")
    old = Device.objects.get(index=3)
    for name in ("nvidia-smi-q.xml", "nvidia-smi-L.txt"):
        path = tmp_path / "n1" / name
        path.write_text(path.read_text().replace(old.uuid, "GPU-00000000-0000-4000-8000-000000000003"))

    out = run(str(tmp_path), "-v", "2")

    assert (
        "n1 (node in pool h100-prod): devices: 1 added, 0 changed, 1 removed; links: 0 added, 7 changed, 0 removed"
        in out
    )
    assert "  ~ GPU0-GPU3 NV12 → NV12 (a GPU of the pair is a new device)" in out
    old.refresh_from_db()
    assert not old.healthy
    new = Device.objects.get(uuid="GPU-00000000-0000-4000-8000-000000000003")
    assert (new.index, new.healthy, new.numa_node) == (3, True, 1)
    assert DeviceLink.objects.filter(node__name="n1").count() == 28
    assert (
        not DeviceLink.objects.filter(device_a=old).exists()
        and not DeviceLink.objects.filter(device_b=old).exists()
    )


def test_new_nodes_need_a_pool_and_existing_ones_never_move(tmp_path, h100_pool):
    write_node(tmp_path, "n1")
    out, _ = refused(str(tmp_path))
    assert "n1: failed: n1: a new node; say which pool it joins" in out

    _, error = refused(str(tmp_path), "--pool", "nope")
    assert str(error) == "NOT_FOUND: no pool nope"

    run(str(tmp_path), "--pool", "h100-prod")
    Pool.objects.create(slug="other", name="Other", site=h100_pool.site)
    out, _ = refused(str(tmp_path), "--pool", "other")
    assert "n1: the node is in pool h100-prod, not other; import never moves nodes between pools" in out


def test_a_topology_only_node_updates_links_of_an_existing_node(tmp_path, h100_pool):
    write_node(tmp_path, "n1", files={"topo-m.txt": None})
    run(str(tmp_path), "--pool", "h100-prod")
    for name in ("nvidia-smi-q.xml", "nvidia-smi-L.txt"):
        (tmp_path / "n1" / name).unlink()
    (tmp_path / "n1" / "topo-m.txt").write_text(node_files("dgx-a100-01", "n1")["topo-m.txt"])

    out = run(str(tmp_path))

    assert "n1 (node in pool h100-prod): devices: 0 added, 8 changed, 0 removed; links: 28 added" in out
    assert DeviceLink.objects.count() == 28


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_progress_bar_shows_on_a_terminal_only(tmp_path, h100_pool):
    for n in range(3):
        write_node(tmp_path, f"n{n}")
    terminal, piped = _Terminal(), io.StringIO()

    call_command(
        "import_fleet",
        str(tmp_path),
        "--pool",
        "h100-prod",
        "--dry-run",
        stdout=io.StringIO(),
        stderr=terminal,
    )
    call_command(
        "import_fleet", str(tmp_path), "--pool", "h100-prod", "--dry-run", stdout=io.StringIO(), stderr=piped
    )

    assert "3/3" in terminal.getvalue() and "node" in terminal.getvalue()
    assert piped.getvalue() == ""


def test_the_service_takes_nodes_from_memory_with_their_own_labels(h100_pool):
    files = node_files("dgx-a100-01", "api-1")
    node = NodeFiles(
        name="api-1",
        smi_q=files["nvidia-smi-q.xml"],
        topo=files["topo-m.txt"].replace("NV12", "NV19x", 1),
        labels={"smi_q": "nodes[0].smiQ", "topo": "nodes[0].topo"},
    )

    result = import_fleet([node], FleetOptions(pool="h100-prod"))

    assert result.nodes[0].as_dict() == {
        "name": "api-1",
        "status": "failed",
        "code": "INVALID_INPUT",
        "message": "nodes[0].topo line 2, column GPU1: 'NV19x' is not a link type (expected X, NV#, PIX, PXB, PHB, NODE or SYS)",
    }


def test_read_fleet_lists_nodes_by_name(tmp_path):
    copy_samples(tmp_path)

    assert [n.name for n in read_fleet(tmp_path)] == ["dgx-a100-01", "dgx-h100-01"]


def test_slices_left_out_of_nvidia_smi_l_are_marked_unhealthy(tmp_path, h100_pool):
    write_node(tmp_path, "n1", sample="dgx-h100-01")
    run(str(tmp_path), "--pool", "h100-prod")
    xml = (tmp_path / "n1" / "nvidia-smi-q.xml").read_text()
    start = xml.index("\t\t\t<mig_device>")
    end = xml.index("</mig_device>", start) + len("</mig_device>\n")
    (tmp_path / "n1" / "nvidia-smi-q.xml").write_text(xml[:start] + xml[end:])
    listed = (tmp_path / "n1" / "nvidia-smi-L.txt").read_text().splitlines()
    gone = listed.pop(1)
    listed = [
        line.replace("Device  1:", "Device  0:")
        .replace("Device  2:", "Device  1:")
        .replace("Device  3:", "Device  2:")
        if n < 4
        else line
        for n, line in enumerate(listed)
    ]
    (tmp_path / "n1" / "nvidia-smi-L.txt").write_text("\n".join(listed) + "\n")

    out = run(str(tmp_path), "-v", "2")

    uuid = gone.split("UUID: ")[1].rstrip(")")
    assert f"  - GPU0/MIG0 {uuid}: not in the files; marked unhealthy, kept for its bookings" in out
    assert not Device.objects.get(uuid=uuid).healthy
    assert Device.objects.filter(node__name="n1", healthy=True).exclude(parent=None).count() == 10


def test_a_topology_alone_never_marks_an_unhealthy_gpu_healthy(tmp_path, h100_pool):
    write_node(tmp_path, "n1", files={"topo-m.txt": None})
    run(str(tmp_path), "--pool", "h100-prod")
    gpu5 = Device.objects.get(index=5)
    gpu5.healthy = False
    gpu5.save()  # through the model signal, so the rollups follow
    for name in ("nvidia-smi-q.xml", "nvidia-smi-L.txt"):
        (tmp_path / "n1" / name).unlink()
    (tmp_path / "n1" / "topo-m.txt").write_text(node_files("dgx-a100-01", "n1")["topo-m.txt"])

    out = run(str(tmp_path))

    assert "links: 28 added" in out
    assert list(Device.objects.filter(healthy=False).values_list("index", flat=True)) == [5]


def test_json_output_holds_each_nodes_result(tmp_path, h100_pool):
    import json

    write_node(tmp_path, "n1")

    data = json.loads(run(str(tmp_path), "--pool", "h100-prod", "--json"))

    assert data["summary"] == "imported 1 node"
    assert data["dryRun"] is False
    assert data["nodes"][0]["status"] == "imported"
    assert data["nodes"][0]["diff"]["links"]["added"][:1] == ["+ GPU0-GPU1 NV12"]
