"""The `nvidia-smi topo -m` parser: pure, no database."""

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inventory.topology import RANKS, TopologyParseError, parse_topo_matrix

from topo_samples import A100_WITH_NICS, DGX_H100, DGX_H100_MP, PCIE_TWO_SOCKETS

ALL_PAIRS_8 = list(itertools.combinations(range(8), 2))


def test_dgx_h100_every_pair_is_nv18():
    matrix = parse_topo_matrix(DGX_H100)

    assert matrix.gpus == [f"GPU{i}" for i in range(8)]
    assert matrix.links == {pair: ("NV", 18) for pair in ALL_PAIRS_8}
    assert list(matrix.links) == ALL_PAIRS_8
    assert matrix.rank_counts() == {"NV": 28}


def test_dgx_h100_reads_affinity_and_ignores_gpu_numa_id():
    matrix = parse_topo_matrix(DGX_H100)

    assert matrix.cpu_affinity == {i: "0-55,112-167" if i < 4 else "56-111,168-223" for i in range(8)}
    assert matrix.numa_affinity == {i: 0 if i < 4 else 1 for i in range(8)}


def test_dgx_h100_recognises_nics_and_their_legend():
    matrix = parse_topo_matrix(DGX_H100)

    assert matrix.nics == ["NIC0", "NIC1", "NIC2", "NIC3"]
    assert matrix.nic_names == {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2", "NIC3": "mlx5_3"}


def test_pcie_box_with_space_separated_columns_gives_each_pair_its_rank():
    matrix = parse_topo_matrix(PCIE_TWO_SOCKETS)

    def expected(i: int, j: int) -> tuple[str, int]:
        if (i < 4) != (j < 4):
            return ("SYS", 0)
        return ("PIX", 0) if i // 2 == j // 2 else ("PXB", 0)

    assert matrix.gpus == [f"GPU{i}" for i in range(8)]
    assert matrix.links == {(i, j): expected(i, j) for i, j in ALL_PAIRS_8}
    assert matrix.links[(0, 1)] == ("PIX", 0)
    assert matrix.links[(0, 3)] == ("PXB", 0)
    assert matrix.links[(3, 4)] == ("SYS", 0)
    assert matrix.links[(6, 7)] == ("PIX", 0)
    assert matrix.rank_counts() == {"PIX": 4, "PXB": 8, "SYS": 16}


def test_pcie_box_affinity_without_nics():
    matrix = parse_topo_matrix(PCIE_TWO_SOCKETS)

    assert matrix.cpu_affinity == {i: "0-23,48-71" if i < 4 else "24-47,72-95" for i in range(8)}
    assert matrix.numa_affinity == {i: 0 if i < 4 else 1 for i in range(8)}
    assert matrix.nics == []
    assert matrix.nic_names == {}


def test_a100_with_ansi_header_and_nic_rows_keeps_only_gpu_links():
    matrix = parse_topo_matrix(A100_WITH_NICS)

    assert matrix.gpus == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert matrix.links == {pair: ("NV", 12) for pair in itertools.combinations(range(4), 2)}
    assert matrix.nics == ["NIC0", "NIC1"]
    assert matrix.nic_names == {"NIC0": "mlx5_0", "NIC1": "mlx5_1"}
    assert matrix.cpu_affinity == {
        0: "48-63,176-191",
        1: "48-63,176-191",
        2: "16-31,144-159",
        3: "16-31,144-159",
    }
    assert matrix.numa_affinity == {0: 3, 1: 3, 2: 1, 3: 1}


def test_colour_codes_inside_cells_are_ignored():
    coloured = DGX_H100.replace("\tNV18\t", "\t\x1b[32mNV18\x1b[0m\t", 1).replace(" X ", "\x1b[1m X \x1b[0m")

    assert parse_topo_matrix(coloured) == parse_topo_matrix(DGX_H100)


def test_windows_line_endings_parse_the_same():
    assert parse_topo_matrix(DGX_H100.replace("\n", "\r\n")) == parse_topo_matrix(DGX_H100)


def test_terminal_rendering_of_a_tabbed_matrix_parses_the_same():
    spaced = "\n".join(line.expandtabs(8) for line in A100_WITH_NICS.splitlines())

    assert parse_topo_matrix(spaced) == parse_topo_matrix(A100_WITH_NICS)


def test_header_with_single_spaces_between_names_still_splits():
    text = (
        "GPU0 GPU1 NIC0 CPU Affinity NUMA Affinity\n"
        "GPU0 X NV4 PIX 0-7 0\n"
        "GPU1 NV4 X PIX 0-7 0\n"
        "NIC0 PIX PIX X\n"
    )

    matrix = parse_topo_matrix(text)

    assert matrix.links == {(0, 1): ("NV", 4)}
    assert matrix.nics == ["NIC0"]
    assert matrix.numa_affinity == {0: 0, 1: 0}


def test_numa_affinity_na_is_none():
    single_socket = (
        "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
        "GPU0\t X \tPHB\t0-31\tN/A\t\tN/A\n"
        "GPU1\tPHB\t X \t0-31\tN/A\t\tN/A\n"
    )

    matrix = parse_topo_matrix(single_socket)

    assert matrix.links == {(0, 1): ("PHB", 0)}
    assert matrix.numa_affinity == {0: None, 1: None}
    assert matrix.cpu_affinity == {0: "0-31", 1: "0-31"}


def test_single_gpu_has_no_links():
    matrix = parse_topo_matrix("\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0-15\t0\n")

    assert matrix.gpus == ["GPU0"]
    assert matrix.links == {}
    assert matrix.numa_affinity == {0: 0}


def test_old_soc_rank_reads_as_sys():
    matrix = parse_topo_matrix("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tSOC\t0-11\nGPU1\tSOC\t X \t12-23\n")

    assert matrix.links == {(0, 1): ("SYS", 0)}
    assert matrix.numa_affinity == {}


def test_asymmetric_cells_keep_the_better_link():
    text = "\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV4\tSYS\nGPU1\tNV8\t X \tNODE\nGPU2\tPIX\tSYS\t X \n"

    assert parse_topo_matrix(text).links == {(0, 1): ("NV", 8), (0, 2): ("PIX", 0), (1, 2): ("NODE", 0)}


def test_text_around_the_matrix_is_ignored():
    text = "Warning: persistence mode is disabled on device 00000000:17:00.0\n\n" + PCIE_TWO_SOCKETS

    assert parse_topo_matrix(text) == parse_topo_matrix(PCIE_TWO_SOCKETS)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no GPU header"),
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", "no GPU header"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X \tNV18\n", "line 3: row GPU1 has 3 cells"),
        ("\tGPU0\tGPU1\nGPU0\t X \nGPU1\tNV18\t X \n", "line 2: row GPU0 has 1 cells, the header has 2"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNVX\nGPU1\tNV18\t X \n", "line 2, column GPU1: 'NVX' is not a link type"),
        ("\tGPU0\tGPU1\nGPU0\t X \tQPI\nGPU1\tQPI\t X \n", "line 2, column GPU1: 'QPI' is not a link type"),
        (
            "\tGPU0\tGPU1\nGPU0\t X \tNV0\nGPU1\tNV0\t X \n",
            "line 2, column GPU1: 'NV0' is not a link type: NV needs at least one link",
        ),
        (
            "\tGPU0\tGPU1\nGPU0\tNV2\tNV2\nGPU1\tNV2\t X \n",
            "line 2, column GPU0: GPU0 against itself should be X",
        ),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV2\n\nLegend:\n", "line 3: no row for GPU1"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU0\t X \tNV2\n", "line 3: second row for GPU0"),
        ("\tGPU0\tGPU1\nGPU0\t X \tNV2\nGPU7\tNV2\t X \n", "line 3: row 'GPU7' has no column"),
        ("\tGPU0\tGPU0\nGPU0\t X \tNV2\n", "line 1: the header names a column twice"),
    ],
    ids=[
        "empty",
        "driver-error",
        "row-too-long",
        "row-too-short",
        "unknown-nv-token",
        "unknown-token",
        "nv-zero",
        "diagonal-not-x",
        "missing-row",
        "duplicate-row",
        "row-without-column",
        "duplicate-column",
    ],
)
def test_malformed_matrix_raises_parse_error_naming_the_line(text, message):
    with pytest.raises(TopologyParseError, match=message.replace("(", r"\(")):
        parse_topo_matrix(text)


def test_the_first_error_in_file_order_is_reported_not_the_first_checked():
    # A bad cell on line 2 comes before a short row on line 4 (which used to be reported first).
    text = "\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV19x\tNV4\nGPU1\tNV4\t X \tNV4\nGPU2\tNV4\n"

    with pytest.raises(TopologyParseError) as caught:
        parse_topo_matrix(text)

    assert str(caught.value) == (
        "line 2, column GPU1: 'NV19x' is not a link type (expected X, NV#, PIX, PXB, PHB, NODE or SYS)"
    )
    assert (caught.value.line, caught.value.column) == (2, "GPU1")


def test_topo_mp_output_is_refused_and_says_to_run_topo_m():
    with pytest.raises(TopologyParseError) as caught:
        parse_topo_matrix(DGX_H100_MP)

    assert str(caught.value) == (
        "line 7: the legend has no NV#: this is `nvidia-smi topo -mp` output, which shows PCIe paths only "
        "and hides NVLink; run `nvidia-smi topo -m` instead"
    )


def test_a_trimmed_legend_that_lists_no_link_types_says_nothing_about_the_command():
    text = "\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X \n\nLegend:\n\n  X    = Self\n"

    assert parse_topo_matrix(text).links == {(0, 1): ("NV", 18)}


def test_a_matrix_without_any_legend_is_still_read():
    assert parse_topo_matrix(DGX_H100.split("\nLegend:")[0]).links == parse_topo_matrix(DGX_H100).links


LOST_TAB = "looks lost; fix the file (Berth does not guess where the value ends)"
LOST_TAB_RE = re.escape(LOST_TAB)


def test_a_lost_tab_between_cpu_and_numa_affinity_is_refused_not_read_as_a_cpu_range():
    broken = DGX_H100.replace("56-111,168-223\t1\t\tN/A", "56-111,168-2231\t\tN/A", 1)

    with pytest.raises(TopologyParseError) as caught:
        parse_topo_matrix(broken)

    assert str(caught.value) == (
        "line 6, column CPU Affinity: '56-111,168-2231' and an empty NUMA Affinity after it: the tab "
        f"between CPU Affinity and NUMA Affinity {LOST_TAB}"
    )


def test_a_lost_tab_in_a_matrix_without_gpu_numa_id_is_refused():
    text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\t0\nGPU1\tNV4\t X \t8-151\n"

    with pytest.raises(
        TopologyParseError, match=f"line 3, column CPU Affinity: '8-151' and no NUMA Affinity.*{LOST_TAB_RE}"
    ):
        parse_topo_matrix(text)


def test_a_lost_tab_in_a_terminal_rendering_is_refused():
    broken = DGX_H100.replace("56-111,168-223\t1\t\tN/A", "56-111,168-2231\t\tN/A", 1)
    spaced = "\n".join(line.expandtabs(8) for line in broken.splitlines())

    with pytest.raises(
        TopologyParseError, match=f"line 6, column CPU Affinity: '56-111,168-2231'.*{LOST_TAB_RE}"
    ):
        parse_topo_matrix(spaced)


def test_a_missing_link_cell_is_a_short_row_not_a_lost_tab():
    text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\t0\nGPU1\t X \t0-7\t0\n"

    with pytest.raises(TopologyParseError, match="line 3: row GPU1 has 3 cells, the header has 4 columns"):
        parse_topo_matrix(text)


@pytest.mark.parametrize(
    ("cpus", "numa", "message"),
    [
        ("0-7,3-5", "0", "column CPU Affinity: '0-7,3-5' is not a CPU list"),
        ("7-0", "0", "column CPU Affinity: '7-0' is not a CPU list"),
        ("0-7;8", "0", "column CPU Affinity: '0-7;8' is not a CPU list"),
        ("0-7", "zero", "column NUMA Affinity: 'zero' is not a NUMA node"),
    ],
)
def test_affinity_cells_are_checked(cpus, numa, message):
    text = f"\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t{cpus}\t{numa}\n"

    with pytest.raises(TopologyParseError, match=f"^line 2, {message}"):
        parse_topo_matrix(text)


def test_parse_error_is_a_value_error():
    assert issubclass(TopologyParseError, ValueError)


_link = st.one_of(
    st.sampled_from([(rank, 0) for rank in RANKS if rank != "NV"]),
    st.integers(min_value=1, max_value=18).map(lambda n: ("NV", n)),
)


@given(
    st.integers(min_value=1, max_value=10).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(_link, min_size=n * (n - 1) // 2, max_size=n * (n - 1) // 2),
            st.lists(st.one_of(st.none(), st.integers(0, 7)), min_size=n, max_size=n),
        )
    ),
    st.booleans(),
)
def test_any_rendered_matrix_parses_back(case, with_tabs):
    """Render a random symmetric matrix as nvidia-smi would and parse it back unchanged."""
    n, link_list, numas = case
    links = dict(zip(itertools.combinations(range(n), 2), link_list, strict=True))

    def cell(i: int, j: int) -> str:
        if i == j:
            return " X "
        rank, count = links[(min(i, j), max(i, j))]
        return f"NV{count}" if rank == "NV" else rank

    lines = ["\t" + "\t".join([*(f"GPU{i}" for i in range(n)), "CPU Affinity", "NUMA Affinity"])]
    for i in range(n):
        numa = "N/A" if numas[i] is None else str(numas[i])
        lines.append("\t".join([f"GPU{i}", *(cell(i, j) for j in range(n)), f"{i * 8}-{i * 8 + 7}", numa]))
    text = "\n".join(lines) + "\n"
    if not with_tabs:
        text = text.expandtabs(8)

    matrix = parse_topo_matrix(text)

    assert matrix.gpus == [f"GPU{i}" for i in range(n)]
    assert matrix.links == links
    assert matrix.numa_affinity == dict(enumerate(numas))
    assert matrix.cpu_affinity == {i: f"{i * 8}-{i * 8 + 7}" for i in range(n)}
