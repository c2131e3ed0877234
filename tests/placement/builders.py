"""Hand-built node views for the placement tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from capacity.placement import (
    Atom,
    DeviceRequest,
    Expression,
    NodeView,
    PlacementRequest,
    Pool,
    Resource,
    Window,
)

POOL = Pool("pool-1")
DAY = Window(1_700_000_000_000, 1_700_086_400_000)


def gpu(node: str, index: int, numa: int | None = None, **attributes: Any) -> Atom:
    """Return whole GPU number index of node."""
    attrs = {"gpuProduct": "NVIDIA-H100-80GB-HBM3", "vramGiB": 80, **attributes}
    if numa is not None:
        attrs.setdefault("numaNode", numa)
    return Atom(id=f"{node}-GPU-{index}", device_class="gpu", numa_node=numa, index=index, attributes=attrs)


def symmetric(pairs: Mapping[tuple[str, str], str]) -> dict[str, dict[str, str]]:
    """Return links[a][b] and links[b][a] for every (a, b) pair."""
    links: dict[str, dict[str, str]] = {}
    for (a, b), link in pairs.items():
        links.setdefault(a, {})[b] = link
        links.setdefault(b, {})[a] = link
    return links


def node(
    node_id: str,
    devices: Iterable[Atom] = (),
    *,
    booked: Iterable[str] = (),
    links: Mapping[str, Mapping[str, str]] | None = None,
    **fields: Any,
) -> NodeView:
    """Return a node view whose free atoms are its devices minus the booked ids."""
    devices = tuple(devices)
    booked = set(booked)
    fields.setdefault("pool_id", POOL.id)
    return NodeView(
        id=node_id,
        devices=devices,
        free=tuple(d for d in devices if d.id not in booked),
        links=links or {},
        **fields,
    )


def dgx_h100(node_id: str = "dgx", *, booked: Iterable[int] = (), **fields: Any) -> NodeView:
    """Return a DGX H100-like board.

        socket 0 / NUMA 0             socket 1 / NUMA 1
      GPU0  GPU1  GPU2  GPU3        GPU4  GPU5  GPU6  GPU7
        \\____\\_____\\_____\\__NVSwitch__/_____/_____/____/
    Every pair of the 8 GPUs is NV (through the NVSwitch fabric).
    """
    gpus = [gpu(node_id, i, numa=0 if i < 4 else 1) for i in range(8)]
    pairs = {(a.id, b.id): "NV" for a in gpus for b in gpus if a.index < b.index}
    return node(
        node_id, gpus, booked=[f"{node_id}-GPU-{i}" for i in booked], links=symmetric(pairs), **fields
    )


def pcie_box(node_id: str = "pcie", *, booked: Iterable[int] = (), **fields: Any) -> NodeView:
    """Return an 8-GPU PCIe server with two sockets.

      socket 0 / NUMA 0                    socket 1 / NUMA 1
         PXB bridge                           PXB bridge
        /          \\                         /          \\
     switch A     switch B    ==SYS==    switch C     switch D
     GPU0 GPU1    GPU2 GPU3              GPU4 GPU5    GPU6 GPU7
     (PIX)        (PIX)                  (PIX)        (PIX)
    Same switch: PIX; same socket, other switch: PXB; other socket: SYS.
    """
    gpus = [gpu(node_id, i, numa=i // 4, gpuProduct="NVIDIA-L40S") for i in range(8)]
    pairs: dict[tuple[str, str], str] = {}
    for a in gpus:
        for b in gpus:
            if a.index >= b.index:
                continue
            if a.index // 2 == b.index // 2:
                pairs[a.id, b.id] = "PIX"
            elif a.index // 4 == b.index // 4:
                pairs[a.id, b.id] = "PXB"
            else:
                pairs[a.id, b.id] = "SYS"
    return node(
        node_id, gpus, booked=[f"{node_id}-GPU-{i}" for i in booked], links=symmetric(pairs), **fields
    )


def a100_mig(node_id: str = "mig", *, booked_slices: Iterable[int] = (), **fields: Any) -> NodeView:
    """Return a two-GPU A100 node whose GPU0 is split into seven MIG slices.

      NUMA 0
      GPU0 (partitioned, mig-1g.10gb x 7: slice 0..6)  --SYS--  GPU1 (whole)
    Slices of GPU0 count as NV to each other; GPU0-GPU1 is SYS.
    The loader leaves a partitioned parent out of free, so free holds the slices and GPU1.
    """
    parent = gpu(node_id, 0, numa=0, gpuProduct="NVIDIA-A100-SXM4-80GB", migCapable=True)
    whole = gpu(node_id, 1, numa=0, gpuProduct="NVIDIA-A100-SXM4-80GB", migCapable=True)
    slices = [
        Atom(
            id=f"{node_id}-MIG-0-{s}",
            device_class="mig-1g.10gb",
            parent_id=parent.id,
            numa_node=0,
            index=s,
            attributes={"gpuProduct": "NVIDIA-A100-SXM4-80GB", "vramGiB": 10},
        )
        for s in range(7)
    ]
    booked = {f"{node_id}-MIG-0-{s}" for s in booked_slices}
    view = node(
        node_id,
        [parent, whole, *slices],
        links=symmetric({(parent.id, whole.id): "SYS"}),
        **fields,
    )
    return dataclasses.replace(view, free=tuple(a for a in (whole, *slices) if a.id not in booked))


def request(
    *devices: DeviceRequest | tuple[str, int], tenant: str = "acme", **fields: Any
) -> PlacementRequest:
    """Return a reservation request for the given device requests (class, count) in POOL over DAY."""
    wanted = tuple(d if isinstance(d, DeviceRequest) else DeviceRequest(d[0], d[1]) for d in devices)
    fields.setdefault("reservation_id", "res-1")
    return PlacementRequest(tenant_id=tenant, pool_id=POOL.id, during=DAY, devices=wanted, **fields)


def gpus(count: int, *, selector: tuple[Expression, ...] = (), topology: str | None = None) -> DeviceRequest:
    """Return a request for count whole GPUs."""
    return DeviceRequest("gpu", count, selector, topology)


def with_resources(view: NodeView, **rows: Resource) -> NodeView:
    """Return view with these scalar resource rows."""
    return dataclasses.replace(view, resources=rows)


def ids(view: NodeView, *indexes: int) -> tuple[str, ...]:
    """Return the GPU ids of view for these indexes."""
    return tuple(f"{view.id}-GPU-{i}" for i in indexes)
