"""manage.py import_fleet: what it refuses, and a failure that stays within its node (database)."""

import re

import pytest
from fleet_helpers import node_files, refused, run, write_node

from inventory.models import Device, DeviceLink, Node

pytestmark = pytest.mark.django_db


def test_one_bad_file_fails_its_node_only_and_the_summary_names_it(tmp_path, h100_pool):
    for n in range(1, 11):
        files = None
        if n == 7:
            topo = node_files("dgx-a100-01", "n7")["topo-m.txt"].replace(
                "GPU2\tNV12\tNV12\t X \tNV12", "GPU2\tNV12\tNV12\t X \tNV19x", 1
            )
            files = {"topo-m.txt": topo}
        write_node(tmp_path, f"n{n:02d}" if n != 7 else "n7", files=files)

    out, error = refused(str(tmp_path), "--pool", "h100-prod")

    assert out.splitlines()[-1] == (
        "imported 9 nodes, 1 failed: n7 (n7/topo-m.txt line 4, column GPU3: 'NV19x' is not a link type "
        "(expected X, NV#, PIX, PXB, PHB, NODE or SYS))"
    )
    assert "n7: failed: n7/topo-m.txt line 4, column GPU3" in out
    assert error.returncode == 2
    assert str(error) == "IMPORT_FAILED: 1 of 10 nodes failed"
    assert Node.objects.count() == 9
    assert not Node.objects.filter(name="n7").exists()
    assert not Device.objects.filter(node__name="n7").exists()


def test_a_bad_file_leaves_an_existing_node_exactly_as_it_was(tmp_path, h100_pool):
    write_node(tmp_path, "n1", files={"topo-m.txt": None})
    run(str(tmp_path), "--pool", "h100-prod")
    before = list(Device.objects.order_by("pk").values_list("uuid", "numa_node", "healthy", "attributes"))
    # Devices would change (a new GPU 3), but the matrix on the last line of the node is bad.
    write_node(
        tmp_path,
        "n1",
        files={
            "topo-m.txt": node_files("dgx-a100-01", "n1")["topo-m.txt"].replace(
                "80-95,208-223\t5", "80-95,208-223\tfive"
            )
        },
    )
    xml = (tmp_path / "n1" / "nvidia-smi-q.xml").read_text()
    (tmp_path / "n1" / "nvidia-smi-q.xml").write_text(
        xml.replace("<product_name>NVIDIA A100-SXM4-80GB", "<product_name>NVIDIA A100-SXM4-40GB", 1)
    )

    out, _ = refused(str(tmp_path))

    assert "n1: failed: n1/topo-m.txt line 8, column NUMA Affinity: 'five' is not a NUMA node" in out
    assert (
        list(Device.objects.order_by("pk").values_list("uuid", "numa_node", "healthy", "attributes"))
        == before
    )
    assert not DeviceLink.objects.exists()


def test_a_device_of_another_node_is_a_conflict(tmp_path, h100_pool):
    write_node(tmp_path, "n1")
    run(str(tmp_path), "--pool", "h100-prod")
    (tmp_path / "n1").rename(tmp_path / "n2")

    out, _ = refused(str(tmp_path), "--pool", "h100-prod")

    assert "n2: failed: n2/nvidia-smi-q.xml: GPU-" in out and "belongs to node n1, not n2" in out


def test_files_that_disagree_fail_the_node(tmp_path, h100_pool):
    listed = node_files("dgx-a100-01", "n1")["nvidia-smi-L.txt"].splitlines()
    listed[2] = listed[2].split("(UUID: ")[0] + "(UUID: GPU-00000000-0000-4000-8000-000000000002)"
    write_node(tmp_path, "n1", files={"nvidia-smi-L.txt": "\n".join(listed) + "\n"})

    out, _ = refused(str(tmp_path), "--pool", "h100-prod")

    assert (
        "n1: failed: n1/nvidia-smi-L.txt line 3, UUID: GPU 2 is GPU-00000000-0000-4000-8000-000000000002 here but GPU-"
        in out
    )


def test_an_unknown_file_fails_its_node_rather_than_being_left_out(tmp_path, h100_pool):
    folder = write_node(tmp_path, "n1")
    (folder / "topo-m.txt").rename(folder / "topo_m.txt")

    out, _ = refused(str(tmp_path), "--pool", "h100-prod")

    assert out.splitlines()[-1] == (
        "imported 0 nodes, 1 failed: n1 (n1/topo_m.txt: not a file import_fleet reads "
        "(expected nvidia-smi-q.xml, nvidia-smi-L.txt, topo-m.txt))"
    )


def test_the_path_must_be_a_fleet(tmp_path, h100_pool):
    (tmp_path / "notes.txt").write_text("hello")

    _, missing = refused(str(tmp_path / "nope"))
    _, not_tar = refused(str(tmp_path / "notes.txt"))
    _, stray = refused(str(tmp_path))

    assert str(missing) == f"INVALID_INPUT: no file or directory '{tmp_path / 'nope'}'"
    assert str(not_tar) == f"INVALID_INPUT: '{tmp_path / 'notes.txt'}' is neither a directory nor a tar file"
    assert (
        str(stray) == "INVALID_INPUT: notes.txt: not a node directory (the path holds one directory per node)"
    )


def test_mig_enabled_gpus_without_nvidia_smi_l_fail_the_node(tmp_path, h100_pool):
    write_node(tmp_path, "n1", sample="dgx-h100-01", files={"nvidia-smi-L.txt": None})

    out, _ = refused(str(tmp_path), "--pool", "h100-prod")

    assert (
        "n1: failed: n1/nvidia-smi-q.xml line 8: GPU 0 has MIG enabled with 4 MIG devices, whose UUIDs only "
        "`nvidia-smi -L` gives: add n1/nvidia-smi-L.txt (what `nvidia-smi -L` prints on the node)"
    ) in out
    assert not Node.objects.exists()


def test_a_node_that_fails_while_writing_keeps_nothing_and_the_next_goes_on(tmp_path, h100_pool, monkeypatch):
    from django.db import DatabaseError

    for name in ("n1", "n2", "n3"):
        write_node(tmp_path, name)
    real = DeviceLink.objects.bulk_create

    def failing(rows, *args, **kwargs):
        if rows and rows[0].node.name == "n2":
            raise DatabaseError("the disk is full")
        return real(rows, *args, **kwargs)

    monkeypatch.setattr(DeviceLink.objects, "bulk_create", failing)

    out, _ = refused(str(tmp_path), "--pool", "h100-prod")

    assert out.splitlines()[-1] == "imported 2 nodes, 1 failed: n2 (n2: the disk is full)"
    assert sorted(Node.objects.values_list("name", flat=True)) == ["n1", "n3"]
    n2_gpus = re.findall(r"GPU-[0-9a-f-]{36}", node_files("dgx-a100-01", "n2")["nvidia-smi-L.txt"])
    assert len(n2_gpus) == 8
    assert not Device.objects.filter(uuid__in=n2_gpus).exists()


def test_a_dry_run_fails_a_topology_past_the_columns_bounds_as_the_import_would(tmp_path, h100_pool):
    """NV40000 or NUMA 99999 would overflow a smallint at the write: the dry run says so first."""
    topo = node_files("dgx-a100-01", "n1")["topo-m.txt"]
    write_node(tmp_path, "n1", files={"topo-m.txt": topo.replace("NV12", "NV40000", 1)})

    out, error = refused(str(tmp_path), "--pool", "h100-prod", "--dry-run")

    assert (
        "n1: failed: n1/topo-m.txt line 2, column GPU1: 'NV40000' is not a link type: NV counts at most 64 links"
        in out
    )
    assert error.returncode == 2
    assert not Node.objects.exists()


def test_a_symbolic_link_in_the_fleet_directory_is_refused_not_followed(tmp_path, h100_pool):
    outside = tmp_path / "outside"
    write_node(outside, "secret")
    fleet = tmp_path / "fleet"
    write_node(fleet, "n1")
    (fleet / "secret").symlink_to(outside / "secret")
    (fleet / "n1" / "nvidia-smi-L.txt").unlink()
    (fleet / "n1" / "nvidia-smi-L.txt").symlink_to(outside / "secret" / "nvidia-smi-L.txt")

    _, linked_dir = refused(str(fleet), "--pool", "h100-prod")
    assert (
        str(linked_dir)
        == "INVALID_INPUT: secret: a symbolic link; the fleet directory holds real directories"
    )
    (fleet / "secret").unlink()
    out, _ = refused(str(fleet), "--pool", "h100-prod")
    assert "n1: failed: n1/nvidia-smi-L.txt: a symbolic link, not a file" in out
    assert not Node.objects.exists()
