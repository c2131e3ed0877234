"""Combine one node's nvidia-smi outputs into the devices and topology they describe.

Pure: no Django, no database. `nvidia-smi -q -x` gives the GPUs (UUID, product, memory, MIG mode),
`nvidia-smi -L` the GPUs and their MIG slices (UUIDs, profiles), `nvidia-smi topo -m` the links and NUMA
affinity. When two files describe the same GPUs they must agree; nothing is guessed to reconcile them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inventory.attributes import AttributeProblem, check_attributes
from inventory.canonical import gpu_attributes, slice_attributes
from inventory.fleet_files import NodeFiles
from inventory.nvsmi import ListedGpu, SmiParseError, SmiQuery, SmiUsage, parse_smi_list, parse_smi_query
from inventory.topology import TopologyParseError, TopoMatrix, parse_topo_matrix
from inventory.words import counted

__all__ = ["FleetInputError", "NodeInventory", "WantedDevice", "read_node"]


class FleetInputError(ValueError):
    """A node's input cannot be imported; `code` is INVALID_INPUT, or CONFLICT, NOT_FOUND."""

    def __init__(self, message: str, code: str = "INVALID_INPUT") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class WantedDevice:
    """A device as the files describe it; `attributes` holds only the keys the files give."""

    uuid: str
    device_class: str
    index: int
    parent: str | None
    attributes: dict[str, Any]
    usage: SmiUsage | None = None  # what the GPU was doing (node reports store it; fleet import not)


@dataclass(frozen=True)
class NodeInventory:
    """What one node's files say: GPUs (None without -q/-L), MIG slices (None without -L), topology."""

    gpus: list[WantedDevice] | None
    slices: list[WantedDevice] | None
    matrix: TopoMatrix | None
    devices_from: str | None = None  # the label of the file the GPU list came from
    topo_from: str | None = None


def _where(label: str, exc: SmiParseError | TopologyParseError) -> str:
    # `n1/topo-m.txt line 4, column GPU3: …`, or `n1/nvidia-smi-L.txt: no GPU lines …`.
    return f"{label} {exc}" if exc.line is not None else f"{label}: {exc}"


def read_node(files: NodeFiles) -> NodeInventory:
    """Parse and cross-check a node's files; raise `FleetInputError` naming file, line and cell.

    Files are read in the order -q, -L, topo -m, and the first problem found is the one reported.
    """
    if files.problem is not None:
        raise FleetInputError(files.problem)
    if files.smi_q is None and files.smi_l is None and files.topo is None:
        raise FleetInputError(f"{files.name}: no nvidia-smi-q.xml, nvidia-smi-L.txt or topo-m.txt")
    query = listed = matrix = None
    try:
        query = parse_smi_query(files.smi_q) if files.smi_q is not None else None
    except SmiParseError as exc:
        raise FleetInputError(_where(files.label("smi_q"), exc)) from None
    try:
        listed = parse_smi_list(files.smi_l) if files.smi_l is not None else None
    except SmiParseError as exc:
        raise FleetInputError(_where(files.label("smi_l"), exc)) from None
    if query is not None and listed is not None:
        _check_agree(query, listed, files)
    elif query is not None:
        split = next((g for g in query.gpus if g.mig_mode == "Enabled" and g.mig_devices), None)
        if split is not None:
            # Without their UUIDs the slices cannot be created, and the GPU alone is no whole-GPU atom.
            raise FleetInputError(
                f"{files.label('smi_q')} line {split.line}: GPU {split.index} has MIG enabled with "
                f"{counted(split.mig_devices, 'MIG device')}, whose UUIDs only `nvidia-smi -L` gives: {files.list_hint()}"
            )
    try:
        matrix = parse_topo_matrix(files.topo) if files.topo is not None else None
    except TopologyParseError as exc:
        raise FleetInputError(_where(files.label("topo"), exc)) from None

    gpus = slices = None
    devices_from = None
    if query is not None or listed is not None:
        gpus = _gpus(query, listed)
        devices_from = files.label("smi_q" if query is not None else "smi_l")
    if listed is not None:
        slices = _slices(listed, {g.index: g for g in gpus or []})
    _check_attributes(gpus or [], slices or [], devices_from or "")
    if matrix is not None and gpus is not None:
        numbers = sorted(int(name.removeprefix("GPU")) for name in matrix.gpus)
        if numbers != [g.index for g in gpus]:
            raise FleetInputError(
                f"{files.label('topo')}: the matrix has {counted(len(numbers), 'GPU')} ({', '.join(matrix.gpus)}), "
                f"{devices_from} lists {len(gpus)}: the files do not describe the same node"
            )
    return NodeInventory(
        gpus=gpus,
        slices=slices,
        matrix=matrix,
        devices_from=devices_from,
        topo_from=files.label("topo") if matrix is not None else None,
    )


def _check_attributes(gpus: list[WantedDevice], slices: list[WantedDevice], source: str) -> None:
    """Refuse what nvidia-smi printed that no attribute may hold (a 10,000-character product name)."""
    index = {g.uuid: g.index for g in gpus}
    for device in [*gpus, *slices]:
        try:
            check_attributes(device.attributes)
        except AttributeProblem as exc:
            name = (
                f"GPU{device.index}"
                if device.parent is None
                else f"GPU{index[device.parent]}/MIG{device.index}"
            )
            raise FleetInputError(f"{source}: {name} {device.uuid}: {exc.field}: {exc.problem}") from None


def _check_agree(query: SmiQuery, listed: list[ListedGpu], files: NodeFiles) -> None:
    label_l, label_q = files.label("smi_l"), files.label("smi_q")
    for gpu in listed:
        if gpu.index >= len(query.gpus):
            raise FleetInputError(
                f"{label_l} line {gpu.line}: GPU {gpu.index} is not in {label_q}, which lists {len(query.gpus)}"
            )
        q = query.gpus[gpu.index]
        if q.uuid != gpu.uuid:
            raise FleetInputError(
                f"{label_l} line {gpu.line}, UUID: GPU {gpu.index} is {gpu.uuid} here but {q.uuid} in {label_q}"
            )
        if q.mig_mode != "Enabled" and gpu.migs:
            raise FleetInputError(
                f"{label_l} line {gpu.migs[0].line}: GPU {gpu.index} lists MIG devices but MIG mode is "
                f"{q.mig_mode} in {label_q}"
            )
        if q.mig_mode == "Enabled" and len(gpu.migs) != q.mig_devices:
            raise FleetInputError(
                f"{label_l} line {gpu.line}: GPU {gpu.index} lists {counted(len(gpu.migs), 'MIG device')}, "
                f"{label_q} {q.mig_devices}"
            )
    if len(listed) < len(query.gpus):
        raise FleetInputError(
            f"{label_l}: lists {counted(len(listed), 'GPU')}, {label_q} {len(query.gpus)}: the files do not describe "
            "the same node"
        )


def _gpus(query: SmiQuery | None, listed: list[ListedGpu] | None) -> list[WantedDevice]:
    gpus = []
    if query is not None:
        for q in query.gpus:
            attributes = gpu_attributes(
                q.product_name, q.memory_mib, q.mig_mode, q.pci_bus_id, q.architecture
            )
            gpus.append(WantedDevice(q.uuid, "gpu", q.index, None, attributes, q.usage))
    else:
        for g in listed or []:
            gpus.append(WantedDevice(g.uuid, "gpu", g.index, None, gpu_attributes(g.name)))
    return gpus


def _slices(listed: list[ListedGpu], gpus: dict[int, WantedDevice]) -> list[WantedDevice]:
    slices = []
    for g in listed:
        parent = gpus[g.index]
        for mig in g.migs:
            # The profile names its memory: 3g.40gb has 40 GB (1c.3g.40gb is a compute slice of one).
            attributes = slice_attributes(parent.attributes, mig.profile)
            slices.append(WantedDevice(mig.uuid, f"mig-{mig.profile}", mig.index, parent.uuid, attributes))
    return slices
