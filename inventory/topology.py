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
# Bounds of what a real box reports, well inside the columns' types (smallint): a GB200 GPU has 18
# NVLinks, Linux numbers at most 1,024 NUMA nodes, and no node carries more GPUs or NICs than this.
MAX_NVLINKS = 64
MAX_NUMA_NODE = 1023
MAX_DEVICE_COLUMNS = 128

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Digits are bounded so that int() never meets a number past its 4,300-digit limit.
_GPU_RE = re.compile(r"^GPU([0-9]{1,4})$")
_NIC_RE = re.compile(r"^NIC([0-9]{1,4})$")
_NV_RE = re.compile(r"^NV([0-9]+)$")
_NIC_LEGEND_RE = re.compile(r"^\s*(NIC[0-9]{1,4})\s*:\s*(\S+)\s*$")
_MULTI_SPACE_RE = re.compile(r" {2,}")
_HEADER_WORD_RE = re.compile(r"CPU Affinity|NUMA Affinity|GPU NUMA ID|\S+")
_DEVICE_NAME_RE = re.compile(r"^(GPU|NIC)[0-9]{1,4}$")
_CPU_LIST_RE = re.compile(r"^[0-9]{1,7}(-[0-9]{1,7})?(,[0-9]{1,7}(-[0-9]{1,7})?)*$")

_CPU_AFFINITY = "CPU Affinity"
_NUMA_AFFINITY = "NUMA Affinity"
# Columns after the device columns; only the first two are read, the others are recognised and skipped.
_AFFINITY_COLUMNS = {_CPU_AFFINITY, _NUMA_AFFINITY, "GPU NUMA ID"}
# Drivers before 384 printed SOC for what later became SYS.
_RANK_ALIASES = {"SOC": "SYS"}
_NOT_AVAILABLE = "N/A"


class TopologyParseError(ValueError):
    """The text is not a topology matrix this parser understands; `line` and `column` say where."""

    def __init__(self, message: str, line: int | None = None, column: str | None = None) -> None:
        where = f"line {line}" if line is not None else ""
        if column is not None:
            where += f", column {column}"
        super().__init__(f"{where}: {message}" if where else message)
        self.problem = message
        self.line = line
        self.column = column


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

    Raise `TopologyParseError` for the first problem in file order, naming its line and column: no GPU
    header, a row that does not match the header, a cell that is not a link type, affinity columns
    that ran into each other (a lost tab), or the output of `nvidia-smi topo -mp`, whose legend has no
    NV# because it shows PCIe paths only and would hide every NVLink.
    """
    lines = [_ANSI_RE.sub("", line).rstrip("\r") for line in text.splitlines()]
    header_at = _find_header(lines)
    if header_at is None:
        raise TopologyParseError("no GPU header: expected a line of column names starting with GPU0")
    columns = _split_header(lines[header_at])
    device_columns = _device_columns(columns, header_at + 1)
    gpu_numbers = _gpu_numbers(device_columns, header_at + 1)

    links: dict[tuple[int, int], tuple[str, int]] = {}
    cpu_affinity: dict[int, str] = {}
    numa_affinity: dict[int, int | None] = {}
    seen: set[str] = set()
    at = header_at + 1
    # One pass in file order, so that the error reported is the first one in the file.
    while at < len(lines) and lines[at].strip() and not lines[at].strip().startswith("Legend"):
        line_no, line = at + 1, lines[at]
        label, cells = _split_row(line, columns, device_columns, line_no)
        if label in seen:
            raise TopologyParseError(f"second row for {label}: {line.strip()!r}", line_no)
        seen.add(label)
        row_pos = device_columns.index(label)
        for col_pos, cell in enumerate(cells[: len(device_columns)]):
            column = device_columns[col_pos]
            if col_pos == row_pos:
                if cell != "X":
                    raise TopologyParseError(
                        f"{label} against itself should be X, found {cell!r}", line_no, column
                    )
                continue
            link = _parse_cell(cell, line_no, column)
            i, j = gpu_numbers.get(label), gpu_numbers.get(column)
            if i is None or j is None:
                continue  # a NIC cell: it tells us nothing about GPU pairs
            pair = (min(i, j), max(i, j))
            links[pair] = _better(links[pair], link) if pair in links else link
        if label in gpu_numbers:
            extras = dict(zip(columns[len(device_columns) :], cells[len(device_columns) :], strict=False))
            if _CPU_AFFINITY in extras:
                cpu_affinity[gpu_numbers[label]] = _check_cpus(extras[_CPU_AFFINITY], line_no, extras)
            if _NUMA_AFFINITY in extras:
                numa_affinity[gpu_numbers[label]] = _parse_numa(extras[_NUMA_AFFINITY], line_no, extras)
        at += 1

    for name in device_columns:
        if name not in seen:
            raise TopologyParseError(f"no row for {name}; the header has a column for it", at + 1)
    _refuse_pcie_only_legend(lines, at)

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
        raise TopologyParseError(f"the header names a column twice: {columns}", line_no)
    return device_columns


def _gpu_numbers(device_columns: list[str], line_no: int) -> dict[str, int]:
    # Other device columns are NICs: NIC0.. on current drivers, the device name (mlx5_0) on old ones.
    if len(device_columns) > MAX_DEVICE_COLUMNS:
        raise TopologyParseError(
            f"{len(device_columns)} device columns: a node has at most {MAX_DEVICE_COLUMNS} GPUs and NICs",
            line_no,
        )
    numbers = {name: int(m.group(1)) for name in device_columns if (m := _GPU_RE.match(name))}
    if len(set(numbers.values())) != len(numbers):
        raise TopologyParseError(f"two GPU columns have the same number: {device_columns}", line_no)
    return numbers


def _split_row(
    line: str, columns: list[str], device_columns: list[str], line_no: int
) -> tuple[str, list[str]]:
    """Return a row's label and its cells, aligned with `columns`."""
    # Without tabs no cell contains a space (the diagonal is " X "), so whitespace separates cells.
    raw = [cell.strip() for cell in line.split("\t")] if "\t" in line else line.split()
    label, cells = raw[0], raw[1:]
    if label not in device_columns:
        raise TopologyParseError(f"row {label!r} has no column in the header: {line.strip()!r}", line_no)
    while cells and not cells[-1]:
        cells.pop()
    if len(cells) != len(columns):
        # nvidia-smi pads some values with an extra tab (`0\t\tN/A`); empty cells are padding.
        cells = [cell for cell in cells if cell]
    is_gpu = _GPU_RE.match(label) is not None
    if is_gpu and len(cells) == len(columns) - 1 and _NUMA_AFFINITY in columns:
        _refuse_lost_tab(cells, columns, len(device_columns), line_no)
    # NIC rows stop after the device columns: a NIC has no CPU or NUMA affinity of its own.
    fits = len(cells) == len(columns) if is_gpu else len(device_columns) <= len(cells) <= len(columns)
    if not fits:
        raise TopologyParseError(
            f"row {label} has {len(cells)} cells, the header has {len(columns)} columns: {line.strip()!r}",
            line_no,
        )
    return label, cells


def _refuse_lost_tab(cells: list[str], columns: list[str], devices: int, line_no: int) -> None:
    """Refuse a GPU row one cell short whose CPU Affinity swallowed the next value (a lost tab)."""
    cpu_at = columns.index(_CPU_AFFINITY) if _CPU_AFFINITY in columns else None
    if cpu_at is None or cpu_at >= len(cells) or len(cells) <= devices:
        return
    cpu = cells[cpu_at]
    if any(cell != "X" and _parse_cell_or_none(cell) is None for cell in cells[:devices]):
        return  # an affinity value among the link cells: a device cell is missing, not a tab
    raise TopologyParseError(
        f"{cpu!r} and no {_NUMA_AFFINITY} after it: the tab between {_CPU_AFFINITY} and "
        f"{_NUMA_AFFINITY} looks lost; fix the file (Berth does not guess where the value ends)",
        line_no,
        _CPU_AFFINITY,
    )


def _parse_cell_or_none(cell: str) -> tuple[str, int] | None:
    try:
        return _parse_cell(cell, 0, "")
    except TopologyParseError:
        return None


def _parse_cell(cell: str, line_no: int, column: str) -> tuple[str, int]:
    cell = _RANK_ALIASES.get(cell, cell)
    if m := _NV_RE.match(cell):
        digits = m.group(1)
        # Bounded before int(), whose limit is 4,300 digits.
        count = int(digits) if len(digits) <= 6 else MAX_NVLINKS + 1
        shown = cell if len(cell) <= 20 else cell[:20] + "…"
        if count < 1:
            raise TopologyParseError(
                f"{cell!r} is not a link type: NV needs at least one link", line_no, column
            )
        if count > MAX_NVLINKS:
            raise TopologyParseError(
                f"{shown!r} is not a link type: NV counts at most {MAX_NVLINKS} links", line_no, column
            )
        return ("NV", count)
    if cell in RANKS:
        return (cell, 0)
    raise TopologyParseError(
        f"{cell!r} is not a link type (expected X, NV#, PIX, PXB, PHB, NODE or SYS)", line_no, column
    )


def _better(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
    return min(a, b, key=lambda link: (RANKS.index(link[0]), -link[1]))


def _check_cpus(value: str, line_no: int, extras: dict[str, str]) -> str:
    """Return a CPU list (`0-55,112-167`, or N/A) after checking it; refuse what ran into NUMA."""
    if _NUMA_AFFINITY in extras and extras[_NUMA_AFFINITY] == "":
        raise TopologyParseError(
            f"{value!r} and an empty {_NUMA_AFFINITY} after it: the tab between {_CPU_AFFINITY} and "
            f"{_NUMA_AFFINITY} looks lost; fix the file (Berth does not guess where the value ends)",
            line_no,
            _CPU_AFFINITY,
        )
    if value == _NOT_AVAILABLE:
        return value
    if not _CPU_LIST_RE.match(value) or not _ascending(value):
        raise TopologyParseError(
            f"{value!r} is not a CPU list (expected ascending ranges such as 0-55,112-167)",
            line_no,
            _CPU_AFFINITY,
        )
    return value


def _ascending(value: str) -> bool:
    last = -1
    for part in value.split(","):
        low, _, high = part.partition("-")
        lo, hi = int(low), int(high or low)
        if lo <= last or hi < lo:
            return False
        last = hi
    return True


def _parse_numa(value: str, line_no: int, extras: dict[str, str]) -> int | None:
    # "N/A" on single-socket boxes; a GPU spanning NUMA nodes has no single one to record.
    if value.isascii() and value.isdigit():
        if len(value) > 4 or int(value) > MAX_NUMA_NODE:
            raise TopologyParseError(
                f"{value[:20]!r} is not a NUMA node (at most {MAX_NUMA_NODE})", line_no, _NUMA_AFFINITY
            )
        return int(value)
    if value == _NOT_AVAILABLE or _CPU_LIST_RE.match(value):
        return None
    raise TopologyParseError(
        f"{value!r} is not a NUMA node (expected a number or N/A)", line_no, _NUMA_AFFINITY
    )


def _refuse_pcie_only_legend(lines: list[str], at: int) -> None:
    """Refuse `nvidia-smi topo -mp` output: its legend lists no NV#, its matrix no NVLink."""
    legend_at = next((n for n in range(at, len(lines)) if lines[n].strip() == "Legend:"), None)
    if legend_at is None:
        return  # a matrix copied without its legend: nothing says which command printed it
    legend = []
    for line in lines[legend_at + 1 :]:
        if line.strip() == "NIC Legend:":
            break
        legend.append(line.split("=")[0].strip())
    # Only a legend that lists the PCIe link types says which command printed it; a trimmed one does not.
    if "PIX" in legend and "NV#" not in legend:
        raise TopologyParseError(
            "the legend has no NV#: this is `nvidia-smi topo -mp` output, which shows PCIe paths only "
            "and hides NVLink; run `nvidia-smi topo -m` instead",
            legend_at + 1,
        )


def _parse_nic_legend(lines: list[str]) -> dict[str, str]:
    names: dict[str, str] = {}
    in_legend = False
    for line in lines:
        if line.strip() == "NIC Legend:":
            in_legend = True
        elif in_legend and (m := _NIC_LEGEND_RE.match(line)):
            names[m.group(1)] = m.group(2)
    return names
