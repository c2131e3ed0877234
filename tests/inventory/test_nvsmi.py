"""The `nvidia-smi -q -x` and `nvidia-smi -L` parsers: pure, no database."""

from pathlib import Path

import pytest

from inventory.nvsmi import SmiParseError, parse_smi_list, parse_smi_query

SAMPLES = Path(__file__).parent / "fleet_samples"
H100_Q = (SAMPLES / "dgx-h100-01" / "nvidia-smi-q.xml").read_text()
H100_L = (SAMPLES / "dgx-h100-01" / "nvidia-smi-L.txt").read_text()
A100_Q = (SAMPLES / "dgx-a100-01" / "nvidia-smi-q.xml").read_text()
A100_L = (SAMPLES / "dgx-a100-01" / "nvidia-smi-L.txt").read_text()

MINIMAL = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
	<attached_gpus>1</attached_gpus>
	<gpu id="00000000:18:00.0">
		<product_name>NVIDIA H100 80GB HBM3</product_name>
		<mig_mode>
			<current_mig>Disabled</current_mig>
			<pending_mig>Disabled</pending_mig>
		</mig_mode>
		<uuid>GPU-c470858f-b360-587c-83e5-c376010a7032</uuid>
		<fb_memory_usage>
			<total>81559 MiB</total>
		</fb_memory_usage>
	</gpu>
</nvidia_smi_log>
"""


def test_dgx_h100_xml_gives_eight_gpus_in_index_order_with_memory_and_mig_mode():
    query = parse_smi_query(H100_Q)

    assert (query.driver_version, query.cuda_version) == ("550.54.15", "12.4")
    assert [g.index for g in query.gpus] == list(range(8))
    assert {g.product_name for g in query.gpus} == {"NVIDIA H100 80GB HBM3"}
    assert {g.memory_mib for g in query.gpus} == {81559}
    assert [g.mig_mode for g in query.gpus] == ["Enabled", "Enabled"] + ["Disabled"] * 6
    assert [g.mig_devices for g in query.gpus] == [4, 7, 0, 0, 0, 0, 0, 0]
    assert query.gpus[0].pci_bus_id == "00000000:18:00.0"
    assert query.gpus[0].architecture == "Hopper"
    assert [g.uuid for g in query.gpus] == [g.uuid for g in parse_smi_list(H100_L)]


def test_dgx_a100_xml_gives_eight_whole_gpus():
    query = parse_smi_query(A100_Q)

    assert {(g.product_name, g.memory_mib, g.mig_mode) for g in query.gpus} == {
        ("NVIDIA A100-SXM4-80GB", 81920, "Disabled")
    }


def test_smi_list_gives_gpus_and_their_mig_slices_with_profiles():
    gpus = parse_smi_list(H100_L)

    assert [g.index for g in gpus] == list(range(8))
    assert [(m.index, m.profile) for m in gpus[0].migs] == [
        (0, "3g.40gb"),
        (1, "2g.20gb"),
        (2, "1g.10gb"),
        (3, "1g.10gb"),
    ]
    assert [m.profile for m in gpus[1].migs] == ["1g.10gb"] * 7
    assert gpus[0].migs[0].uuid == "MIG-2844d289-b552-5090-93bd-141b0fe67670"
    assert gpus[0].migs[0].line == 2
    assert all(not g.migs for g in gpus[2:])
    assert all(not g.migs for g in parse_smi_list(A100_L))


def test_smi_list_reads_old_drivers_mig_uuids_and_crlf():
    text = (
        "GPU 0: A100-SXM4-40GB (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)\r\n"
        "  MIG 1g.5gb Device 0: (UUID: MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/7/0)\r\n"
        "  MIG 1c.3g.20gb Device 1: (UUID: MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/1/0)\r\n"
    )

    gpus = parse_smi_list(text)

    assert [m.profile for m in gpus[0].migs] == ["1g.5gb", "1c.3g.20gb"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no GPU lines"),
        ("No devices found.\n", "line 1: not a line of `nvidia-smi -L`"),
        (
            "GPU 1: X (UUID: GPU-c470858f-b360-587c-83e5-c376010a7032)\n",
            "line 1: GPU 1 where GPU 0 was expected",
        ),
        ("GPU 0: X (UUID: GPU-nothex)\n", "line 1, UUID: 'GPU-nothex' is not a GPU UUID"),
        (
            "  MIG 1g.10gb Device 0: (UUID: MIG-2844d289-b552-5090-93bd-141b0fe67670)\n",
            "line 1: a MIG device before any GPU line",
        ),
        (H100_L.replace("Device  1:", "Device  2:", 1), "line 3: MIG Device 2 where Device 1 of GPU 0"),
        (
            H100_L.replace(
                "MIG-6f10138c-e18f-5298-9235-9c4e7b697ac1", "MIG-2844d289-b552-5090-93bd-141b0fe67670"
            ),
            "line 3, UUID: MIG-2844d289-.* is listed twice",
        ),
        (H100_L.replace("MIG 2g.20gb", "MIG 2x.20gb", 1), "line 3: not a line of `nvidia-smi -L`"),
    ],
)
def test_smi_list_refuses_bad_lines_naming_the_first(text, message):
    with pytest.raises(SmiParseError, match=message.replace("(", r"\(")):
        parse_smi_list(text)


def test_minimal_xml_with_nvidia_smis_doctype_is_read():
    (gpu,) = parse_smi_query(MINIMAL).gpus

    assert (gpu.uuid, gpu.memory_mib, gpu.mig_mode, gpu.line) == (
        "GPU-c470858f-b360-587c-83e5-c376010a7032",
        81559,
        "Disabled",
        5,
    )


def test_xml_without_mig_mode_is_a_gpu_that_cannot_be_split():
    text = MINIMAL.replace(
        "\t\t<mig_mode>\n\t\t\t<current_mig>Disabled</current_mig>\n\t\t\t<pending_mig>Disabled</pending_mig>\n\t\t</mig_mode>\n",
        "",
    )

    assert parse_smi_query(text).gpus[0].mig_mode == "N/A"


BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE nvidia_smi_log [
  <!ENTITY lol "lol">
  <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
]>
<nvidia_smi_log><driver_version>&lol3;</driver_version></nvidia_smi_log>
"""
EXTERNAL = """<?xml version="1.0"?>
<!DOCTYPE nvidia_smi_log [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<nvidia_smi_log><driver_version>&secret;</driver_version></nvidia_smi_log>
"""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BILLION_LAUGHS, "line 2: a DOCTYPE with an internal subset is refused"),
        (EXTERNAL, "line 2: a DOCTYPE with an internal subset is refused"),
        (
            "<nvidia_smi_log><driver_version>&ent;</driver_version></nvidia_smi_log>",
            "line 1: not well-formed XML: undefined entity",
        ),
        ("<nvidia_smi_log>\n<gpu>\n</nvidia_smi_log>", "line 3: not well-formed XML: mismatched tag"),
        ("", "empty"),
        ("<html><body>502 Bad Gateway</body></html>", "line 1: the root element is <html>"),
        (
            MINIMAL.replace("<attached_gpus>1<", "<attached_gpus>2<"),
            "line 4, element attached_gpus: says 2 GPUs",
        ),
        (
            MINIMAL.replace("GPU-c470858f", "GPU-X470858f"),
            "line 11, element gpu/uuid: 'GPU-X470858f-.*' is not a GPU UUID",
        ),
        (
            MINIMAL.replace("<uuid>GPU-c470858f-b360-587c-83e5-c376010a7032</uuid>", ""),
            "line 5, element gpu: no <uuid>",
        ),
        (
            MINIMAL.replace("81559 MiB", "80 GB"),
            "line 13, element gpu/fb_memory_usage/total: '80 GB' is not an amount of MiB",
        ),
        (
            MINIMAL.replace("<current_mig>Disabled", "<current_mig>Maybe"),
            "line 8, element gpu/mig_mode/current_mig: 'Maybe' is not a MIG mode",
        ),
        (
            MINIMAL.replace('<gpu id="00000000:18:00.0">', "<gpu>")
            .replace("<attached_gpus>1", "<attached_gpus>0")
            .split("<gpu>")[0]
            + "</nvidia_smi_log>",
            "no <gpu> elements",
        ),
    ],
    ids=[
        "billion-laughs",
        "external-entity",
        "undefined-entity",
        "not-well-formed",
        "empty",
        "not-nvidia-smi",
        "attached-count",
        "bad-uuid",
        "no-uuid",
        "bad-memory",
        "bad-mig-mode",
        "no-gpus",
    ],
)
def test_xml_refusals_name_the_line_and_element(text, message):
    with pytest.raises(SmiParseError, match=message.replace("(", r"\(")):
        parse_smi_query(text)


def test_xml_second_gpu_with_the_same_uuid_is_refused():
    gpu = MINIMAL[MINIMAL.index("\t<gpu") : MINIMAL.index("</gpu>") + 7]
    text = MINIMAL.replace(gpu, gpu + gpu).replace("<attached_gpus>1", "<attached_gpus>2")

    with pytest.raises(SmiParseError, match=r"line 22, element gpu/uuid: GPU-c470858f-.* is listed twice"):
        parse_smi_query(text)
