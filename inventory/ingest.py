"""Write what a node reports (devices, labels, topology, cached images) into inventory.

Every entry point checks the whole body first (`inventory.report_body`), then writes in one
transaction that locks the node row before its devices (the lock order is nodes → devices), and
tells capacity through `node_state_changed` when device health changed.

The report body (docs/api.md, "The node report") never trusts a report to be whole beyond what it
says: per device, a field left out keeps the stored value (`index` is required for a new device); a
device left out of `devices` is marked unhealthy (the node no longer sees it), but a report that
would so mark more than half of the node's healthy devices at once is refused unless it says
`"replace": true`. A report holds at most MAX_DEVICES devices, MAX_LABELS labels and MAX_IMAGES
images, and a node at most MAX_DEVICES devices. A report that repeats what is stored writes
nothing (an agent reports every 30 s; a write would bump its pool's generation and so rebuild the
placer's index for nothing).

Who sends the report matters (inventory.trust): through the node's own credential it adds hardware
unverified after the node's first report, may not reshape a booked device, and sets only `bc.dev/`
labels; an operator keeps full rights. A refused report is kept as the node's last refusal.
"""

import json
import re
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from inventory.attribution import attributed
from inventory.changelog import record_event, recording
from inventory.errors import IngestError
from inventory.models import (
    Device,
    DeviceLink,
    DeviceSample,
    Node,
    NodeImageCache,
    NodeLabel,
)
from inventory.report_body import MAX_DEVICES, DeviceIn, read_report
from inventory.services import record_report
from inventory.signals import devices_reshaped, devices_withdrawn, node_state_changed
from inventory.topology import TopoMatrix
from inventory.trust import Reporter, booked, held_elsewhere, record_refusal, refuse_reshape, shape_changes
from inventory.validators import SYSTEM_LABEL_PREFIX

__all__ = [
    "IngestError",
    "ReportResult",
    "Reporter",
    "apply_node_report",
    "apply_node_report_json",
    "sync_device_links",
]


@dataclass(frozen=True)
class ReportResult:
    """What `apply_node_report` changed."""

    devices: int
    created: int
    marked_unhealthy: int
    became_healthy: int
    labels_set: int
    labels_removed: int
    links: int | None  # None when the report had no topology
    images: int | None = None  # None when the report had no images
    samples: int = 0  # devices whose utilization the report carried
    unverified: int = 0  # of the created, those waiting for an operator to accept them

    def as_json(self) -> dict[str, Any]:
        """Return the result as the API and the CLI say it: its fields in order, in camelCase."""
        return {re.sub(r"_(.)", lambda m: m[1].upper(), f.name): getattr(self, f.name) for f in fields(self)}


def sync_device_links(node: Node, matrix: TopoMatrix) -> int:
    """Replace the node's GPU links with the matrix's; return the number of links written.

    GPU<i> is the node's device of class gpu, without a parent, at index i. Devices also take their
    NUMA node from the matrix's NUMA affinity where it names one.
    """
    with transaction.atomic():
        node = Node.objects.select_for_update().get(pk=node.pk)
        return _sync_links(node, matrix)


def apply_node_report(
    node: Node, report: Any, *, by: Reporter, reported_at: datetime | None = None
) -> ReportResult:
    """Apply a report of the node's devices, labels and (optionally) topology, sent `by` someone.

    A section present in the report is the whole truth for its list: devices that are left out are
    marked unhealthy (never deleted: bookings reference them), system labels that are left out are
    removed. Within a listed device, a field left out keeps its stored value. Operators' `bookable`
    choices and operator labels are kept. Through the node's own credential (inventory.trust) a
    report adds devices unverified once the node has any, may not reshape a booked device
    (CONFLICT), and may set labels under `bc.dev/` only. Raise `IngestError` before writing
    anything when the report is refused; the refusal is kept as the node's last (NodeRefusal) and
    counted. What changed is one row of the node's history. With `reported_at`, the report is also
    noted as the node's last (inventory.services.record_report) in the same transaction, so
    capacity follows the whole report once.
    """
    try:
        return _apply(node, report, by, reported_at)
    except IngestError as error:
        record_refusal(node, error, by)
        raise


def _apply(node: Node, report: Any, by: Reporter, reported_at: datetime | None) -> ReportResult:
    body = read_report(report, node.name)
    devices, labels, matrix = body.devices, body.labels, body.matrix
    if by.node and labels is not None:
        _check_node_labels(labels)
    # The history names the reporter (the signed-in user, else "system"); a report that repeats
    # itself writes no row, since nothing in it changed.
    with transaction.atomic(), recording(reason="node report"):
        node = Node.objects.select_for_update().get(pk=node.pk)
        created = marked_unhealthy = became_healthy = unverified = 0
        health_changed = woke = False
        if devices is not None:
            counts = _upsert_devices(node, devices, body.replace, by)
            created, created_healthy, marked_unhealthy, became_healthy, changed, unverified = counts
            health_changed = bool(created or marked_unhealthy or became_healthy or changed)
            # New healthy devices add capacity just as recovered ones do (unverified ones add
            # none); a changed class or attribute may make a pending request fit.
            woke = bool(became_healthy or created_healthy or changed)
        labels_set = labels_removed = 0
        if labels is not None:
            labels_set, labels_removed = _replace_system_labels(node, labels, by)
        links = _sync_links(node, matrix) if matrix is not None else None
        samples = _store_samples(node, devices, body.owners) if devices is not None else 0
        images = _replace_images(node, body.images) if body.images is not None else None
        said = _said(created, marked_unhealthy, became_healthy, unverified)
        if said:
            record_event(node, "report", said)
        if reported_at is not None and record_report(node, by.name, agent=by.node, now=reported_at):
            health_changed = woke = True  # AgentStale cleared: the node may take work again
        if health_changed:
            node_state_changed.send(sender=Node, pool_ids={node.pool_id}, woke=woke)
    return ReportResult(
        devices=len(devices) if devices is not None else 0,
        created=created,
        marked_unhealthy=marked_unhealthy,
        became_healthy=became_healthy,
        labels_set=labels_set,
        labels_removed=labels_removed,
        links=links,
        images=images,
        samples=samples,
        unverified=unverified,
    )


def _check_node_labels(labels: dict[str, str]) -> None:
    """Refuse labels a node's own credential may not set: only system labels, under `bc.dev/`."""
    for key in labels:
        if not key.startswith(SYSTEM_LABEL_PREFIX):
            raise IngestError(
                f"labels[{key!r}]: a node may report only system labels, under {SYSTEM_LABEL_PREFIX}; "
                "other labels are the operators'",
                code="FORBIDDEN",
            )


def _said(created: int, unhealthy: int, healthy: int, unverified: int = 0) -> str:
    """Return what a report did to the node's devices, in words for its history ("" for nothing).

    Labels have history rows of their own; links are written anew by every topology.
    """
    parts = [
        f"{n} {text}"
        for n, text in (
            (created, "devices added"),
            (unhealthy, "devices marked unhealthy"),
            (healthy, "devices healthy again"),
            (unverified, "of them unverified (waiting for an operator)"),
        )
        if n
    ]
    return "report: " + ", ".join(parts) if parts else ""


def apply_node_report_json(node_name: str, text: str, *, by: Reporter) -> ReportResult:
    """Apply a JSON report to the node named `node_name`; raise `Node.DoesNotExist` for an unknown one."""
    node = Node.objects.get(name=node_name)
    try:
        report = json.loads(text)
    except json.JSONDecodeError as exc:
        error = IngestError(f"report: not valid JSON: {exc}")
        record_refusal(node, error, by)
        raise error from exc
    return apply_node_report(node, report, by=by)


def _sync_links(node: Node, matrix: TopoMatrix) -> int:
    """Replace links with the node row already locked."""
    # A replaced GPU keeps its row (bookings reference it) beside its successor at the same index: the
    # healthy one is the GPU in the slot now, else the newest.
    gpus: dict[int, Device] = {}
    for device in (
        Device.objects.select_for_update()
        .filter(node=node, device_class="gpu", parent__isnull=True)
        .order_by("pk")
    ):
        held = gpus.get(device.index)
        if held is not None and held.healthy and device.healthy:
            raise IngestError(
                f"topology: node {node.name} has two healthy gpu devices at index {device.index}: "
                f"{held.uuid} and {device.uuid}"
            )
        if held is None or device.healthy or not held.healthy:
            gpus[device.index] = device
    by_number: dict[int, Device] = {}
    for name in matrix.gpus:
        number = int(name.removeprefix("GPU"))
        if number not in gpus:
            raise IngestError(f"topology: {name}: node {node.name} has no gpu device at index {number}")
        by_number[number] = gpus[number]

    rows = []
    for (i, j), (rank, nvlinks) in matrix.links.items():
        a, b = sorted((by_number[i], by_number[j]), key=lambda device: device.pk)
        rows.append(DeviceLink(node=node, device_a=a, device_b=b, rank=rank, nvlinks=nvlinks))
    stored = set(DeviceLink.objects.filter(node=node).values_list("device_a", "device_b", "rank", "nvlinks"))
    if stored != {(r.device_a.pk, r.device_b.pk, r.rank, r.nvlinks) for r in rows}:
        DeviceLink.objects.filter(node=node).delete()
        DeviceLink.objects.bulk_create(rows)

    for number, numa in matrix.numa_affinity.items():
        device = by_number[number]
        if numa is not None and device.numa_node != numa:
            device.numa_node = numa
            # An update, not a save: capacity's receivers follow the report once, not per device.
            Device.objects.filter(pk=device.pk).update(numa_node=numa)
    return len(rows)


def _upsert_devices(
    node: Node, devices: list[DeviceIn], replace: bool, by: Reporter
) -> tuple[int, int, int, int, int, int]:
    """Create or update the reported devices and mark the rest unhealthy.

    Return the counts: created, created healthy, marked unhealthy, became healthy, devices whose
    class, parent or attributes changed, and created unverified (inventory.trust).
    """
    existing = {d.uuid: d for d in Device.objects.select_for_update().filter(node=node).order_by("pk")}
    elsewhere = held_elsewhere(node.name, [d.uuid for d in devices])
    if elsewhere is not None:
        raise IngestError(f"devices: {elsewhere}", code="CONFLICT")

    reported = {d.uuid for d in devices}
    new = [d for d in devices if d.uuid not in existing]
    # An unverified device is only the node's claim: a report that leaves it out withdraws it (it was
    # never bookable, so nothing references it), and made-up devices cannot hold the node at the cap.
    parents_kept = {d.parent_id for d in existing.values() if d.verified}
    withdrawn = [
        d.pk
        for uuid, d in existing.items()
        if not d.verified and uuid not in reported and d.pk not in parents_kept
    ]
    kept = len(existing) - len(withdrawn)
    if kept + len(new) > MAX_DEVICES:
        raise IngestError(
            f"devices: node {node.name} would have {kept + len(new)} devices; at most {MAX_DEVICES}"
        )
    for n, item in enumerate(devices):
        if item.uuid not in existing and item.index is None:
            raise IngestError(f"devices[{n}].index: required for a new device ({item.uuid})")
    healthy_now = [d for d in existing.values() if d.healthy and d.verified]
    left_out = [d for d in healthy_now if d.uuid not in reported]
    if not replace and left_out and 2 * len(left_out) > len(healthy_now):
        raise IngestError(
            f"devices: the report leaves out {len(left_out)} of the node's {len(healthy_now)} healthy "
            'devices, which would mark them unhealthy; send "replace": true if they are gone'
        )
    # A booked device keeps its shape against a node; an operator's change moves its bookings.
    reshaped = shape_changes(existing, devices)
    held = booked(reshaped) if reshaped else {}
    if held and by.node:
        raise refuse_reshape(node, existing, reshaped, held)
    if held:
        devices_reshaped.send(sender=Device, pool_ids={node.pool_id}, device_ids=sorted(held))
    # A node's first devices come with it; hardware its own credential adds later waits for an
    # operator (shown, counted nowhere, never offered).
    verified = not (by.node and existing)

    created = created_healthy = became_healthy = marked_unhealthy = changed = 0
    saved: dict[str, Device] = {}
    # Parents first, so that children can point at their rows. Rows are written in bulk and by
    # queryset updates: a model save would run capacity's receivers once per device, each refreshing
    # the whole pool's rollups; apply_node_report tells capacity once instead.
    for level in ([d for d in devices if d.parent is None], [d for d in devices if d.parent is not None]):
        fresh = []
        for item in level:
            parent = saved[item.parent] if item.parent is not None else None
            device = existing.get(item.uuid)
            if device is None:
                fresh.append(
                    Device(
                        node=node,
                        uuid=item.uuid,
                        device_class=item.device_class or "gpu",
                        parent=parent,
                        index=item.index,
                        numa_node=item.numa_node,
                        attributes=item.attributes or {},
                        healthy=item.healthy,
                        bookable=verified,
                        verified=verified,
                    )
                )
                created_healthy += item.healthy and verified
                continue
            if item.healthy and not device.healthy:
                became_healthy += 1
            elif device.healthy and not item.healthy:
                marked_unhealthy += 1
            was = _stored(device)
            if item.device_class is not None:
                device.device_class = item.device_class
            device.parent = parent
            if item.index is not None:
                device.index = item.index
            if item.has_numa:
                device.numa_node = item.numa_node
            if item.attributes is not None:
                device.attributes = (
                    {**device.attributes, **item.attributes} if item.merge_attributes else item.attributes
                )
            device.healthy = item.healthy
            # `bookable` is the operator's to set; a report never changes it.
            now = _stored(device)
            if now != was:
                Device.objects.filter(pk=device.pk).update(**dict(zip(_REPORTED, now, strict=True)))
                # A new class, parent or attributes may let a pending request fit (a selector, a
                # MIG split); a NUMA node or index alone changes no capacity.
                changed += any(a != b for a, b, f in zip(was, now, _REPORTED, strict=True) if f in _CAPACITY)
            saved[item.uuid] = device
        for device in Device.objects.bulk_create(fresh):
            saved[device.uuid] = device
        created += len(fresh)

    missing = [d.pk for uuid, d in existing.items() if uuid not in saved and d.healthy and d.verified]
    marked_unhealthy += Device.objects.filter(pk__in=missing).update(healthy=False)
    if withdrawn:
        _withdraw(withdrawn)
    unverified = 0 if verified else created
    return created, created_healthy, marked_unhealthy, became_healthy, changed, unverified


def _withdraw(pks: list[int]) -> None:
    """Delete unverified devices a report no longer claims, with their links and samples.

    Row by row deletes would run capacity's receivers once per device; unverified devices count
    nowhere, so there is nothing for them to follow. What other apps keep of them (usage's hourly
    rows) goes through `devices_withdrawn`, in this transaction.
    """
    gone = Device.objects.filter(pk__in=pks, verified=False)
    DeviceLink.objects.filter(Q(device_a__in=gone) | Q(device_b__in=gone)).delete()
    DeviceSample.objects.filter(device__in=gone).delete()
    devices_withdrawn.send(sender=Device, device_ids=list(pks))
    gone.filter(parent__isnull=False)._raw_delete(gone.db)
    gone._raw_delete(gone.db)


def _store_samples(node: Node, devices: list[DeviceIn], owners: dict[int, int] | None) -> int:
    """Store this minute's sample of each device the report says is busy or idle (one upsert), with
    whose its processes are where the report attributes them (`owners`: pid -> reservation)."""
    used = [d for d in devices if d.usage is not None]
    if not used:
        return 0
    minute = timezone.now().replace(second=0, microsecond=0)
    pks = dict(Device.objects.filter(node=node, uuid__in=[d.uuid for d in used]).values_list("uuid", "pk"))
    rows = [
        DeviceSample(
            device_id=pks[d.uuid],
            minute=minute,
            gpu_percent=d.usage.gpu_percent,
            memory_used_mib=d.usage.memory_used_mib,
            processes=len(d.usage.processes),
            process_mib=sum(p.used_mib or 0 for p in d.usage.processes),
            process_owners=None if owners is None else attributed((p.pid for p in d.usage.processes), owners),
        )
        for d in used
        if d.usage is not None
    ]
    # A second report within the minute replaces the first: at most one row a device a minute.
    DeviceSample.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["device", "minute"],
        update_fields=["gpu_percent", "memory_used_mib", "processes", "process_mib", "process_owners"],
    )
    return len(rows)


_REPORTED = ("device_class", "parent_id", "index", "numa_node", "attributes", "healthy")
_CAPACITY = {"device_class", "parent_id", "attributes"}


def _stored(device: Device) -> tuple[Any, ...]:
    return tuple(getattr(device, field) for field in _REPORTED)


def _replace_images(node: Node, images: dict[str, str]) -> int:
    """Make the node's image cache the reported one, writing only what differs; return its size."""
    stored = dict(NodeImageCache.objects.filter(node=node).values_list("image", "state"))
    gone = [image for image in stored if image not in images]
    if gone:
        NodeImageCache.objects.filter(node=node, image__in=gone).delete()
    NodeImageCache.objects.bulk_create(
        NodeImageCache(node=node, image=image, state=state)
        for image, state in images.items()
        if image not in stored
    )
    for image, state in images.items():
        if image in stored and stored[image] != state:
            NodeImageCache.objects.filter(node=node, image=image).update(state=state)
    return len(images)


def _replace_system_labels(node: Node, labels: dict[str, str], by: Reporter) -> tuple[int, int]:
    """Write reported labels as system labels and drop unreported system ones; return the counts.

    A node's own credential never sets, overwrites or removes a label an operator made.
    """
    current = {label.key: label for label in NodeLabel.objects.filter(node=node)}
    written = 0
    for key, value in labels.items():
        label = current.get(key)
        if by.node and label is not None and label.source != NodeLabel.Source.SYSTEM:
            continue
        if label is None:
            NodeLabel.objects.create(node=node, key=key, value=value, source=NodeLabel.Source.SYSTEM)
            written += 1
        elif label.value != value or label.source != NodeLabel.Source.SYSTEM:
            label.value, label.source = value, NodeLabel.Source.SYSTEM
            label.save(update_fields=["value", "source"])
            written += 1
    stale = [
        label.pk
        for key, label in current.items()
        if label.source == NodeLabel.Source.SYSTEM and key not in labels
    ]
    removed, _ = NodeLabel.objects.filter(pk__in=stale).delete()
    return written, removed
