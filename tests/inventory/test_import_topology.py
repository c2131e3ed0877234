"""import_topology never guesses: GPU counts, topo -mp output, lost tabs and NUMA values (database)."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from inventory.models import Device, DeviceLink, Node, Pool, Site

from topo_samples import DGX_H100, DGX_H100_MP, PCIE_TWO_SOCKETS

pytestmark = pytest.mark.django_db

FOUR_GPUS = (
    "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tNV4\tNV4\tNV4\t0-15\t0\n"
    "GPU1\tNV4\t X \tNV4\tNV4\t0-15\t0\n"
    "GPU2\tNV4\tNV4\t X \tNV4\t16-31\t1\n"
    "GPU3\tNV4\tNV4\tNV4\t X \t16-31\t1\n"
)


@pytest.fixture
def node(db):
    site = Site.objects.create(slug="fra1", name="Frankfurt 1")
    pool = Pool.objects.create(slug="fra1-pool", name="Pool", site=site)
    node = Node.objects.create(name="dgx-01", pool=pool)
    for i in range(8):
        Device.objects.create(node=node, uuid=f"GPU-dgx-01-{i}", index=i, numa_node=i // 4)
    return node


def run(tmp_path, text: str, *args: str) -> str:
    path = tmp_path / "topo.txt"
    path.write_text(text)
    out = io.StringIO()
    call_command("import_topology", "dgx-01", str(path), *args, stdout=out)
    return out.getvalue()


def test_a_matrix_with_fewer_gpus_than_the_node_is_refused_with_the_reason(tmp_path, node):
    with pytest.raises(CommandError) as caught:
        run(tmp_path, FOUR_GPUS)

    assert str(caught.value) == (
        f"INVALID_INPUT: {tmp_path / 'topo.txt'}: the matrix has 4 GPUs, node dgx-01 has 8 (GPU4, GPU5, "
        "GPU6, GPU7 not in the file); nothing was changed. If the node really changed, run again with "
        "--replace-devices (replaceDevices in the API): GPUs the files leave out are then marked unhealthy, "
        "never deleted"
    )
    assert caught.value.returncode == 2
    assert not DeviceLink.objects.exists()
    assert not Device.objects.filter(healthy=False).exists()


def test_a_matrix_naming_a_gpu_slot_the_node_never_had_is_refused(tmp_path, node):
    nine = "\tGPU0\tGPU8\nGPU0\t X \tNV4\nGPU8\tNV4\t X \n"

    with pytest.raises(
        CommandError, match=r"the matrix has 2 GPUs, node dgx-01 has 8 \(GPU1, .* not in the file; GPU8 new\)"
    ):
        run(tmp_path, nine)


def test_an_unhealthy_gpu_listed_again_is_not_a_different_count(tmp_path, node):
    gpu = Device.objects.get(index=6)
    gpu.healthy = False
    gpu.save()

    assert run(tmp_path, DGX_H100).strip() == "node dgx-01: 28 links (28 NV), 8 devices"


def test_replace_devices_takes_the_matrix_as_the_truth(tmp_path, node):
    line = run(tmp_path, FOUR_GPUS, "--replace-devices")

    assert line.strip() == "node dgx-01: 6 links (6 NV), 4 devices"
    assert sorted(Device.objects.filter(healthy=False).values_list("index", flat=True)) == [4, 5, 6, 7]
    assert DeviceLink.objects.filter(rank="NV", nvlinks=4).count() == 6


def test_topo_mp_output_is_refused_saying_to_run_topo_m(tmp_path, node):
    with pytest.raises(
        CommandError, match=r"line 7: the legend has no NV#: .* run `nvidia-smi topo -m` instead"
    ):
        run(tmp_path, DGX_H100_MP)


def test_a_lost_tab_is_refused_naming_line_and_column(tmp_path, node):
    broken = DGX_H100.replace("56-111,168-223\t1\t\tN/A", "56-111,168-2231\t\tN/A", 1)

    with pytest.raises(CommandError, match=r"^INVALID_INPUT: line 6, column CPU Affinity: '56-111,168-2231'"):
        run(tmp_path, broken)

    assert not DeviceLink.objects.exists()


def test_numa_a_matrix_does_not_give_is_cleared_unless_keep_numa(tmp_path, node):
    no_numa = (
        PCIE_TWO_SOCKETS.replace("NUMA Affinity", "").replace("      0\n", "\n").replace("     1\n", "\n")
    )

    run(tmp_path, no_numa, "--keep-numa")
    assert list(Device.objects.order_by("index").values_list("numa_node", flat=True)) == [0] * 4 + [1] * 4

    out = run(tmp_path, no_numa, "--dry-run")
    assert "  ~ GPU0 GPU-dgx-01-0: numaNode 0 → none" in out
    assert (
        out.splitlines()[-1]
        == "dry run, nothing stored: node dgx-01: 28 links (4 PIX, 8 PXB, 16 SYS), 8 devices"
    )
    assert list(Device.objects.order_by("index").values_list("numa_node", flat=True)) == [0] * 4 + [1] * 4

    run(tmp_path, no_numa)
    assert set(Device.objects.values_list("numa_node", flat=True)) == {None}


def test_a_dry_run_stores_no_links(tmp_path, node):
    out = run(tmp_path, DGX_H100, "--dry-run")

    assert "  + GPU0-GPU1 NV18" in out
    assert not DeviceLink.objects.exists()


@pytest.mark.parametrize("flag", ["--dry-run", "--replace-devices", "--keep-numa"])
def test_matrix_flags_on_a_node_report_are_refused_and_nothing_is_stored(tmp_path, node, flag):
    import json

    report = json.dumps({"topology": DGX_H100})
    with pytest.raises(CommandError) as refused:
        run(tmp_path, report, flag)
    assert str(refused.value) == f"INVALID_INPUT: {flag} apply to a topology matrix, not to a node report"
    assert DeviceLink.objects.count() == 0
