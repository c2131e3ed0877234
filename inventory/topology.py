"""Parse the matrix that `nvidia-smi topo -m` prints.

Pure: no Django, no database. `parse_topo_matrix` turns the text into a `TopoMatrix`; ingestion
(`inventory.ingest`) maps it onto a node's devices.

The format, as nvidia-smi prints it::

    \\t\\x1b[4mGPU0\\tGPU1\\tNIC0\\tCPU Affinity\\tNUMA Affinity\\tGPU NUMA ID\\x1b[0m
    GPU0\\t X \\tNV18\\tPIX\\t0-55,112-167\\t0\\t\\tN/A
    GPU1\\tNV18\\t X \\tNODE\\t0-55,112-167\\t0\\t\\tN/A
    NIC0\\tPIX\\tNODE\\t X \\n
    \\n
    Legend:
    ...
    NIC Legend:

      NIC0: mlx5_0
"""

import re
from dataclasses import dataclass, field

__all__ = ["RANKS", "TopoMatrix", "TopologyParseError", "parse_topo_matrix"]

# Best first, as the placement spec ranks links.
RANKS = ("NV", "PIX", "PXB", "PHB", "NODE", "SYS")

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_GPU_RE = re.compile(r"^GPU(\d+)$")
_NIC_RE = re.compile(r"^NIC(\d+)$")
_NV_RE = re.compile(r"^NV(\d+)$")
_NIC_LEGEND_RE = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_MULTI_SPACE_RE = re.compile(r" {2,}")
_HEADER_WORD_RE = re.compile(r"CPU Affinity|NUMA Affinity|GPU NUMA ID|\S+")
_DEVICE_NAME_RE = re.compile(r"^(GPU|NIC)\d+$")

_CPU_AFFINITY = "CPU Affinity"
_NUMA_AFFINITY = "NUMA Affinity"
# Columns after the device columns; only the first two are read, the others are recognised and skipped.
_AFFINITY_COLUMNS = {_CPU_AFFINITY, _NUMA_AFFINITY, "GPU NUMA ID"}
# Drivers before 384 printed SOC for what later became SYS.
_RANK_ALIASES = {"SOC": "SYS"}
_NOT_AVAILABLE = "N/A"


class TopologyParseError(ValueError):
    """The text is not a topology matrix this parser understands."""


@dataclass(frozen=True)
class TopoMatrix:
    """What `nvidia-smi topo -m` says about one node.

    `links` maps each unordered GPU pair `(i, j)`, `i < j`, to `(rank, nvlink_count)`; the count is 0
    unless the rank is NV. GPU numbers come from the column names (`GPU3` is 3).
    """

    gpus: list[str]
    links: dict[tuple[int, int], tuple[str, int]]
    cpu_affinity: dict[int, str] = field(default_factory=dict)
    numa_affinity: dict[int, int | None] = field(default_factory=dict)
    nics: list[str] = field(default_factory=list)
    nic_names: dict[str, str] = field(default_factory=dict)

    def rank_counts(self) -> dict[str, int]:
        """Count links by rank, best rank first, leaving out ranks with none."""
        counts = {rank: 0 for rank in RANKS}
        for rank, _ in self.links.values():
            counts[rank] += 1
        return {rank: n for rank, n in counts.items() if n}


def parse_topo_matrix(text: str) -> TopoMatrix:
    """Parse `nvidia-smi topo -m` output into a `TopoMatrix`.

    Columns may be separated by tabs or by runs of two or more spaces; ANSI colour codes are ignored.
    NIC rows and columns are recognised (and their names read from the `NIC Legend:` block) but give no
    GPU links. A matrix should be symmetric; when the two cells of a pair disagree, the better link is
    kept (NV with more links beats NV with fewer, which beats PIX, ..., SYS).

    Raise `TopologyParseError`, naming the line, when there is no GPU header, a row does not match the
    header, or a cell holds a token that is not a link rank.
    """
    lines = [_ANSI_RE.sub("", line).rstrip("\r") for line in text.splitlines()]
    header_at = _find_header(lines)
    if header_at is None:
        raise TopologyParseError("no GPU header: expected a line of column names starting with GPU0")
    columns = _split_header(lines[header_at])
    device_columns = _device_columns(columns, header_at + 1)
    gpu_numbers = _gpu_numbers(device_columns, header_at + 1)

    cells_by_row: dict[str, tuple[int, list[str]]] = {}
    at = header_at + 1
    while at < len(lines) and lines[at].strip() and not lines[at].strip().startswith("Legend"):
        line_no, line = at + 1, lines[at]
        label, cells = _split_row(line, columns, device_columns, line_no)
        if label in cells_by_row:
            raise TopologyParseError(f"line {line_no}: second row for {label}: {line.strip()!r}")
        cells_by_row[label] = (line_no, cells)
        at += 1

    for name in device_columns:
        if name not in cells_by_row:
            raise TopologyParseError(f"line {at + 1}: no row for {name}; the header has a column for it")

    links: dict[tuple[int, int], tuple[str, int]] = {}
    cpu_affinity: dict[int, str] = {}
    numa_affinity: dict[int, int | None] = {}
    for row_pos, name in enumerate(device_columns):
        line_no, cells = cells_by_row[name]
        for col_pos, cell in enumerate(cells[: len(device_columns)]):
            if col_pos == row_pos:
                if cell != "X":
                    raise TopologyParseError(
                        f"line {line_no}: {name} against itself should be X, found {cell!r}"
                    )
                continue
            link = _parse_cell(cell, line_no, name, device_columns[col_pos])
            i, j = gpu_numbers.get(name), gpu_numbers.get(device_columns[col_pos])
            if i is None or j is None:
                continue  # a NIC cell: it tells us nothing about GPU pairs
            pair = (min(i, j), max(i, j))
            links[pair] = _better(links[pair], link) if pair in links else link
        if name in gpu_numbers:
            extras = dict(zip(columns[len(device_columns) :], cells[len(device_columns) :], strict=False))
            if _CPU_AFFINITY in extras:
                cpu_affinity[gpu_numbers[name]] = extras[_CPU_AFFINITY]
            if _NUMA_AFFINITY in extras:
                numa_affinity[gpu_numbers[name]] = _parse_numa(extras[_NUMA_AFFINITY])

    return TopoMatrix(
        gpus=[name for name in device_columns if name in gpu_numbers],
        links=dict(sorted(links.items())),
        cpu_affinity=cpu_affinity,
        numa_affinity=numa_affinity,
        nics=[name for name in device_columns if name not in gpu_numbers],
        nic_names=_parse_nic_legend(lines[at:]),
    )


def _find_header(lines: list[str]) -> int | None:
    """Return the index of the column-name line: GPU0 first, then something other than the X cell."""
    for at, line in enumerate(lines):
        tokens = line.split()
        if tokens and tokens[0] == "GPU0" and (len(tokens) == 1 or tokens[1] != "X"):
            return at
    return None


def _split_header(line: str) -> list[str]:
    if "\t" in line:
        return [part.strip() for part in line.split("\t") if part.strip()]
    columns: list[str] = []
    for part in _MULTI_SPACE_RE.split(line.strip()):
        # Hand-aligned copies may leave one space between names; split a part that is nothing but
        # device names and known column names, and keep any other (unknown, multi-word) name whole.
        words = _HEADER_WORD_RE.findall(part)
        if all(word in _AFFINITY_COLUMNS or _DEVICE_NAME_RE.match(word) for word in words):
            columns.extend(words)
        else:
            columns.append(part)
    return columns


def _device_columns(columns: list[str], line_no: int) -> list[str]:
    """Return the leading GPU/NIC columns, before the affinity columns."""
    device_columns: list[str] = []
    for name in columns:
        if name in _AFFINITY_COLUMNS:
            break
        device_columns.append(name)
    if len(set(device_columns)) != len(device_columns):
        raise TopologyParseError(f"line {line_no}: the header names a column twice: {columns}")
    return device_columns


def _gpu_numbers(device_columns: list[str], line_no: int) -> dict[str, int]:
    # Other device columns are NICs: NIC0.. on current drivers, the device name (mlx5_0) on old ones.
    numbers = {name: int(m.group(1)) for name in device_columns if (m := _GPU_RE.match(name))}
    if len(set(numbers.values())) != len(numbers):
        raise TopologyParseError(f"line {line_no}: two GPU columns have the same number: {device_columns}")
    return numbers


def _split_row(
    line: str, columns: list[str], device_columns: list[str], line_no: int
) -> tuple[str, list[str]]:
    """Return a row's label and its cells, aligned with `columns`."""
    # Without tabs no cell contains a space (the diagonal is " X "), so whitespace separates cells.
    raw = [cell.strip() for cell in line.split("\t")] if "\t" in line else line.split()
    label, cells = raw[0], raw[1:]
    if label not in device_columns:
        raise TopologyParseError(
            f"line {line_no}: row {label!r} has no column in the header: {line.strip()!r}"
        )
    while cells and not cells[-1]:
        cells.pop()
    if len(cells) != len(columns):
        # nvidia-smi pads some values with an extra tab (`0\t\tN/A`); empty cells are padding.
        cells = [cell for cell in cells if cell]
    is_gpu = _GPU_RE.match(label) is not None
    # NIC rows stop after the device columns: a NIC has no CPU or NUMA affinity of its own.
    fits = len(cells) == len(columns) if is_gpu else len(device_columns) <= len(cells) <= len(columns)
    if not fits:
        raise TopologyParseError(
            f"line {line_no}: row {label} has {len(cells)} cells, the header has {len(columns)} columns: "
            f"{line.strip()!r}"
        )
    return label, cells


def _parse_cell(cell: str, line_no: int, row: str, column: str) -> tuple[str, int]:
    cell = _RANK_ALIASES.get(cell, cell)
    if m := _NV_RE.match(cell):
        count = int(m.group(1))
        if count < 1:
            raise TopologyParseError(f"line {line_no}: {row}-{column}: NV needs at least one link: {cell!r}")
        return ("NV", count)
    if cell in RANKS:
        return (cell, 0)
    raise TopologyParseError(
        f"line {line_no}: {row}-{column}: unknown link {cell!r} (expected X, NV#, PIX, PXB, PHB, NODE or SYS)"
    )


def _better(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
    return min(a, b, key=lambda link: (RANKS.index(link[0]), -link[1]))


def _parse_numa(value: str) -> int | None:
    # "N/A" on single-socket boxes; a GPU spanning NUMA nodes has no single one to record.
    return int(value) if value.isdigit() else None


def _parse_nic_legend(lines: list[str]) -> dict[str, str]:
    names: dict[str, str] = {}
    in_legend = False
    for line in lines:
        if line.strip() == "NIC Legend:":
            in_legend = True
        elif in_legend and (m := _NIC_LEGEND_RE.match(line)):
            names[m.group(1)] = m.group(2)
    return names
