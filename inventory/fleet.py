"""Import a fleet: for each node, its nvidia-smi outputs become nodes, devices, MIG slices, links and NUMA.

The one path that `manage.py import_fleet` and the fleet API both call. Each node is read (pure,
`inventory.fleet_read`), compared with what the database holds, and written in its own transaction
(the node row locked before its devices, as the lock order wants): one bad node fails alone, with
nothing of it stored, and the others go on. A dry run computes the same diff and writes nothing.

What never happens silently: a GPU count that differs from the node's (refused unless
`replace_devices`), NUMA values the files do not give (cleared, and the diff says so, unless
`keep_numa`), a node moved between pools (refused), a device that belongs to another node (CONFLICT).
Devices the files leave out are marked unhealthy, never deleted: bookings reference them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.db import DatabaseError, transaction

from inventory.fleet_files import NodeFiles, valid_node_name
from inventory.fleet_read import FleetInputError, NodeInventory, WantedDevice, read_node
from inventory.fleet_results import FleetOptions, FleetResult, NodeDiff, NodeResult
from inventory.models import Device, DeviceLink, Node, Pool
from inventory.signals import node_state_changed
from inventory.trust import held_elsewhere
from inventory.words import counted

__all__ = ["FleetOptions", "FleetResult", "NodeDiff", "NodeResult", "import_fleet"]


def import_fleet(
    nodes: Iterable[NodeFiles],
    options: FleetOptions | None = None,
    on_node: Callable[[NodeResult], None] | None = None,
) -> FleetResult:
    """Import each node in its own transaction; raise `FleetInputError` (NOT_FOUND) for an unknown pool."""
    options = options or FleetOptions()
    pool = None
    if options.pool is not None:
        pool = Pool.objects.filter(slug=options.pool).first()
        if pool is None:
            raise FleetInputError(f"no pool {options.pool}", code="NOT_FOUND")
    results = []
    for files in nodes:
        result = _import_node(files, pool, options)
        results.append(result)
        if on_node is not None:
            on_node(result)
    return FleetResult(dry_run=options.dry_run, nodes=results)


def _import_node(files: NodeFiles, pool: Pool | None, options: FleetOptions) -> NodeResult:
    try:
        problem = valid_node_name(files.name)
        if problem is not None:
            raise FleetInputError(problem)
        inventory = read_node(files)
        with transaction.atomic():
            diff = _apply(files.name, inventory, pool, options)
    except FleetInputError as exc:
        return NodeResult(files.name, "failed", code=exc.code, message=exc.message)
    except DatabaseError as exc:
        # Such as another import creating the same node at the same time; the node's transaction is gone.
        return NodeResult(files.name, "failed", code="CONFLICT", message=f"{files.name}: {exc}".strip())
    if not diff.changes:
        return NodeResult(files.name, "unchanged", diff=diff)
    return NodeResult(files.name, "would import" if options.dry_run else "imported", diff=diff)


def _name(device: Device | WantedDevice, gpu_index: dict[str, int]) -> str:
    """Return `GPU3`, or `GPU0/MIG2` for a slice (by its parent's index)."""
    parent = device.parent if isinstance(device, WantedDevice) else getattr(device.parent, "uuid", None)
    if parent is None:
        return f"GPU{device.index}"
    return f"GPU{gpu_index.get(parent, '?')}/MIG{device.index}"


def _numa_text(value: int | None) -> str:
    return "none" if value is None else str(value)


def _apply(name: str, inv: NodeInventory, pool: Pool | None, options: FleetOptions) -> NodeDiff:
    """Diff the node against its files and, unless a dry run, write the difference."""
    node = Node.objects.filter(name=name).select_related("pool")
    node = (node if options.dry_run else node.select_for_update(of=("self",))).first()
    if node is None and pool is None:
        raise FleetInputError(f"{name}: a new node; say which pool it joins (--pool, or pool in the API)")
    if node is not None and pool is not None and node.pool_id != pool.pk:
        raise FleetInputError(
            f"{name}: the node is in pool {node.pool.slug}, not {pool.slug}; import never moves nodes between pools"
        )
    if node is None and inv.gpus is None:
        raise FleetInputError(
            f"{inv.topo_from}: {name} is a new node: its GPUs need UUIDs from nvidia-smi-q.xml or nvidia-smi-L.txt"
        )
    existing = _devices(node, lock=not options.dry_run)
    by_uuid = {d.uuid: d for d in existing}
    # The GPU in each slot now: the healthy one, else the newest (a replaced GPU keeps its row).
    slot: dict[int, Device] = {}
    for d in existing:
        if d.parent_id is None and d.device_class == "gpu" and (d.index not in slot or d.healthy):
            slot[d.index] = d
    diff = NodeDiff(node="exists" if node else "added", pool=(node.pool if node else pool).slug)  # type: ignore[union-attr]

    wanted_gpus = inv.gpus
    if wanted_gpus is None:  # topology only: the GPUs are the node's, by index
        assert inv.matrix is not None
        numbers = sorted(int(g.removeprefix("GPU")) for g in inv.matrix.gpus)
        _check_count(name, inv.topo_from, numbers, slot, options, "the matrix has")
        for n in numbers:
            if n not in slot:
                raise FleetInputError(
                    f"{inv.topo_from}: GPU{n}: node {name} has no gpu device at index {n}; "
                    "add nvidia-smi-q.xml or nvidia-smi-L.txt to create it"
                )
        wanted_gpus = [WantedDevice(slot[n].uuid, "gpu", n, None, {}) for n in numbers]
    else:
        _check_count(name, inv.devices_from, [g.index for g in wanted_gpus], slot, options, "lists")
    wanted = [*wanted_gpus, *(inv.slices or [])]
    elsewhere = held_elsewhere(name, [w.uuid for w in wanted])
    if elsewhere is not None:
        raise FleetInputError(f"{inv.devices_from}: {elsewhere}", code="CONFLICT")

    gpu_index = {w.uuid: w.index for w in wanted_gpus} | {
        d.uuid: d.index
        for d in existing
        if d.parent_id is None and d.uuid not in {w.uuid for w in wanted_gpus}
    }
    numa = _wanted_numa(inv, wanted_gpus, by_uuid, options)
    creates: list[tuple[WantedDevice, int | None]] = []
    updates: list[tuple[Device, dict[str, Any]]] = []
    for w in wanted:
        target_numa = numa.get(w.parent or w.uuid, by_uuid[w.uuid].numa_node if w.uuid in by_uuid else None)
        device = by_uuid.get(w.uuid)
        if device is None:
            creates.append((w, target_numa))
            diff.devices["added"].append(_describe_new(w, gpu_index, target_numa))
            continue
        fields, notes = _changes(device, w, target_numa, inv)
        if fields:
            updates.append((device, fields))
            diff.devices["changed"].append(f"~ {_name(w, gpu_index)} {w.uuid}: " + "; ".join(notes))

    retire = _retired(existing, {w.uuid for w in wanted}, inv, options)
    for d in retire:
        diff.devices["removed"].append(
            f"- {_name(d, gpu_index)} {d.uuid}: not in the files; marked unhealthy, kept for its bookings"
        )

    final_gpus = {w.index: w.uuid for w in wanted_gpus}
    link_rows = _diff_links(node, inv, final_gpus, diff) if inv.matrix is not None else None
    if not any(diff.links.values()):
        link_rows = None  # rewriting the same links would only make the placer reload the pool
    if not options.dry_run:
        _write(name, node, pool, creates, updates, retire, link_rows, by_uuid)
    return diff


def _devices(node: Node | None, *, lock: bool) -> list[Device]:
    """Return the node's devices (locked, after the node row, unless a dry run)."""
    if node is None:
        return []
    devices = Device.objects.filter(node=node).select_related("parent").order_by("pk")
    return list(devices.select_for_update(of=("self",)) if lock else devices)


def _retired(
    existing: list[Device], wanted: set[str], inv: NodeInventory, options: FleetOptions
) -> list[Device]:
    """Return the healthy devices the files leave out, which are to be marked unhealthy.

    GPUs only when the files list GPUs (or --replace-devices says the matrix is the truth); slices when
    `nvidia-smi -L` leaves them out, or with their GPU.
    """
    gpus_known = inv.gpus is not None or options.replace_devices
    retire = [
        d
        for d in existing
        if d.parent_id is None
        and d.device_class == "gpu"
        and d.healthy
        and gpus_known
        and d.uuid not in wanted
    ]
    gone = {d.uuid for d in retire}
    retire += [
        d
        for d in existing
        if d.parent_id is not None
        and d.healthy
        and d.uuid not in wanted
        and (inv.slices is not None or d.parent.uuid in gone)
    ]
    return retire


def _check_count(
    name: str,
    source: str | None,
    numbers: list[int],
    slot: dict[int, Device],
    options: FleetOptions,
    verb: str,
) -> None:
    """Refuse files that lose a healthy GPU of the node or name a slot it never had, unless asked to."""
    if not slot or options.replace_devices:
        return
    healthy = {i for i, d in slot.items() if d.healthy}
    # A GPU that is unhealthy but listed again is the same count; one listed at a new index is not.
    lost, gained = sorted(healthy - set(numbers)), sorted(set(numbers) - set(slot))
    if not lost and not gained:
        return
    details = []
    if lost:
        details.append(f"{', '.join(f'GPU{i}' for i in lost)} not in the file")
    if gained:
        details.append(f"{', '.join(f'GPU{i}' for i in gained)} new")
    raise FleetInputError(
        f"{source}: {verb} {counted(len(numbers), 'GPU')}, node {name} has {len(healthy)} ({'; '.join(details)}); "
        "nothing was changed. If the node really changed, run again with --replace-devices "
        "(replaceDevices in the API): GPUs the files leave out are then marked unhealthy, never deleted"
    )


def _wanted_numa(
    inv: NodeInventory, gpus: list[WantedDevice], by_uuid: dict[str, Device], options: FleetOptions
) -> dict[str, int | None]:
    """Return the NUMA node each GPU gets by uuid; without a matrix, none (existing values stay)."""
    if inv.matrix is None:
        return {}
    numa: dict[str, int | None] = {}
    for g in gpus:
        value = inv.matrix.numa_affinity.get(g.index)
        if value is None and options.keep_numa and g.uuid in by_uuid:
            value = by_uuid[g.uuid].numa_node
        numa[g.uuid] = value
    return numa


def _describe_new(w: WantedDevice, gpu_index: dict[str, int], numa: int | None) -> str:
    facts = [w.attributes.get("productName") if w.parent is None else w.device_class]
    if w.parent is None and "vramGiB" in w.attributes:
        facts.append(f"{w.attributes['vramGiB']} GiB")
    if w.attributes.get("migMode") == "enabled":
        facts.append("MIG enabled")
    facts.append(f"NUMA {_numa_text(numa)}")
    return f"+ {_name(w, gpu_index)} {w.uuid} ({', '.join(str(f) for f in facts if f)})"


def _changes(
    device: Device, w: WantedDevice, numa: int | None, inv: NodeInventory
) -> tuple[dict[str, Any], list[str]]:
    """Return the fields to write on an existing device and the lines that say so."""
    fields: dict[str, Any] = {}
    notes: list[str] = []
    if device.device_class != w.device_class:
        fields["device_class"] = w.device_class
        notes.append(f"class {device.device_class} → {w.device_class}")
    if device.index != w.index:
        fields["index"] = w.index
        notes.append(f"index {device.index} → {w.index}")
    parent = device.parent.uuid if device.parent_id else None
    if parent != w.parent:
        fields["parent"] = w.parent  # a uuid: resolved to the row when written
        notes.append(f"parent {parent or 'none'} → {w.parent or 'none'}")
    if not device.healthy and inv.gpus is not None:  # a matrix alone does not show a GPU answers
        fields["healthy"] = True
        notes.append("healthy false → true (present again)")
    merged = {**device.attributes, **w.attributes}
    if merged != device.attributes:
        fields["attributes"] = merged
        for key in sorted(w.attributes):
            if device.attributes.get(key) != w.attributes[key]:
                notes.append(f"{key} {device.attributes.get(key, 'none')} → {w.attributes[key]}")
    if inv.matrix is not None and device.numa_node != numa:
        fields["numa_node"] = numa
        note = f"numaNode {_numa_text(device.numa_node)} → {_numa_text(numa)}"
        if numa is None:
            note += f" ({inv.topo_from} gives none; --keep-numa keeps it)"
        notes.append(note)
    return fields, notes


def _diff_links(
    node: Node | None, inv: NodeInventory, final_gpus: dict[int, str], diff: NodeDiff
) -> list[tuple[str, str, str, int]]:
    """Fill the link diff; return the links to store as (uuid a, uuid b, rank, nvlinks)."""
    assert inv.matrix is not None
    wanted = {
        (i, j): (rank, nv, final_gpus[i], final_gpus[j]) for (i, j), (rank, nv) in inv.matrix.links.items()
    }
    current: dict[tuple[int, int], tuple[str, int, str, str]] = {}
    if node is not None:
        for link in DeviceLink.objects.filter(node=node).select_related("device_a", "device_b"):
            a, b = sorted((link.device_a, link.device_b), key=lambda d: d.index)
            current[(a.index, b.index)] = (link.rank, link.nvlinks, a.uuid, b.uuid)

    def rank(value: tuple[str, int, str, str]) -> str:
        return f"NV{value[1]}" if value[0] == "NV" else value[0]

    for pair in sorted(set(wanted) | set(current)):
        label = f"GPU{pair[0]}-GPU{pair[1]}"
        now, then = current.get(pair), wanted.get(pair)
        if now is None and then is not None:
            diff.links["added"].append(f"+ {label} {rank(then)}")
        elif then is None and now is not None:
            diff.links["removed"].append(f"- {label} {rank(now)}")
        elif now != then and now is not None and then is not None:
            note = "" if now[2:] == then[2:] else " (a GPU of the pair is a new device)"
            diff.links["changed"].append(f"~ {label} {rank(now)} → {rank(then)}{note}")
    return [(ua, ub, r, nv) for (r, nv, ua, ub) in wanted.values()]


def _write(
    name: str,
    node: Node | None,
    pool: Pool | None,
    creates: list[tuple[WantedDevice, int | None]],
    updates: list[tuple[Device, dict[str, Any]]],
    retire: list[Device],
    link_rows: list[tuple[str, str, str, int]] | None,
    by_uuid: dict[str, Device],
) -> None:
    """Write the node's changes (its row already locked, or new)."""
    if node is None:
        node = Node.objects.create(name=name, pool=pool)
    rows = dict(by_uuid)
    # Parents first, so that slices can point at their rows; bulk writes send no per-row signals,
    # one node_state_changed below refreshes the pool's rollups once.
    for parents in (True, False):
        batch = [
            Device(
                node=node,
                uuid=w.uuid,
                device_class=w.device_class,
                parent=rows[w.parent] if w.parent else None,
                index=w.index,
                numa_node=numa,
                attributes=w.attributes,
            )
            for w, numa in creates
            if (w.parent is None) == parents
        ]
        for device in Device.objects.bulk_create(batch):
            rows[device.uuid] = device
    became_healthy = False
    changed: set[str] = set()
    for device, fields in updates:
        if "parent" in fields:
            fields["parent"] = rows[fields["parent"]] if fields["parent"] else None
        became_healthy |= fields.get("healthy", False)
        for name, value in fields.items():
            setattr(device, name, value)
        changed.update(fields)
    if updates:
        # One statement: the pool's generation moves once for the whole node, not once per device.
        Device.objects.bulk_update([device for device, _ in updates], sorted(changed))
    Device.objects.filter(pk__in=[d.pk for d in retire]).update(healthy=False)
    if link_rows is not None:
        DeviceLink.objects.filter(node=node).delete()
        links = []
        for ua, ub, rank, nv in link_rows:
            a, b = sorted((rows[ua], rows[ub]), key=lambda d: d.pk)
            links.append(DeviceLink(node=node, device_a=a, device_b=b, rank=rank, nvlinks=nv))
        DeviceLink.objects.bulk_create(links)
    if creates or retire or any("healthy" in f or "device_class" in f or "parent" in f for _, f in updates):
        node_state_changed.send(sender=Node, pool_ids={node.pool_id}, woke=bool(creates) or became_healthy)
