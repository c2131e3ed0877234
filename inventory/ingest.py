"""Write what a node reports (devices, labels, topology) into inventory.

Every entry point validates first, then writes in one transaction that locks the node row before its
devices (the lock order is nodes → devices), and tells capacity through `node_state_changed` when device
health changed.

The report body (docs/api.md, "The node report") never trusts a report to be whole beyond what it
says: per device, a field left out keeps the stored value (`index` is required for a new device); a
device left out of `devices` is marked unhealthy (the node no longer sees it), but a report that
would so mark more than half of the node's healthy devices at once is refused unless it says
`"replace": true`. A report holds at most MAX_DEVICES devices and MAX_LABELS labels, and a node at
most MAX_DEVICES devices.
"""

import json
import re
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from inventory.history import record_event, recording
from inventory.models import Device, DeviceLink, Node, NodeLabel
from inventory.signals import node_state_changed
from inventory.topology import MAX_NUMA_NODE, TopologyParseError, TopoMatrix, parse_topo_matrix
from inventory.validators import validate_label_key

__all__ = [
    "IngestError",
    "ReportResult",
    "apply_node_report",
    "apply_node_report_json",
    "sync_device_links",
]

_REPORT_FIELDS = {"devices", "labels", "topology", "replace"}
# A DGX has 8 GPUs and up to 56 MIG slices; 256 devices leaves room for any real box, and bounds
# what one report (and one node page) can cost.
MAX_DEVICES = 256
MAX_LABELS = 64
# GPU and MIG UUIDs, and device classes (gpu, mig-3g.40gb, mig-1g.10gb+me): no spaces, no line breaks.
_UUID_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._:/+-]*\Z")
_CLASS_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._+-]*\Z")
_DEVICE_FIELDS = {"uuid", "class", "index", "numaNode", "parent", "healthy", "attributes"}
# Field limits of the models, checked here so that bad input fails before anything is written.
_UUID_MAX = Device._meta.get_field("uuid").max_length
_CLASS_MAX = Device._meta.get_field("device_class").max_length
_LABEL_VALUE_MAX = NodeLabel._meta.get_field("value").max_length
_POSITIVE_INT_MAX = 2_147_483_647


class IngestError(ValueError):
    """Input that cannot be applied; `code` is INVALID_INPUT, or CONFLICT for another node's device."""

    def __init__(self, message: str, code: str = "INVALID_INPUT") -> None:
        super().__init__(message)
        self.code = code


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


@dataclass(frozen=True)
class _DeviceIn:
    uuid: str
    device_class: str | None  # None: left out (kept; "gpu" for a new device)
    index: int | None  # None: left out (kept; required for a new device)
    numa_node: int | None
    has_numa: bool
    parent: str | None
    healthy: bool
    attributes: dict[str, Any] | None  # None: left out (kept; {} for a new device)


def sync_device_links(node: Node, matrix: TopoMatrix) -> int:
    """Replace the node's GPU links with the matrix's; return the number of links written.

    GPU<i> is the node's device of class gpu, without a parent, at index i. Devices also take their
    NUMA node from the matrix's NUMA affinity where it names one.
    """
    with transaction.atomic():
        node = Node.objects.select_for_update().get(pk=node.pk)
        return _sync_links(node, matrix)


def apply_node_report(node: Node, report: Any) -> ReportResult:
    """Apply a node's report of its devices, labels and (optionally) topology.

    A section present in the report is the whole truth for its list: devices that are left out are
    marked unhealthy (never deleted: bookings reference them), system labels that are left out are
    removed. Within a listed device, a field left out keeps its stored value. Operators' `bookable`
    choices and operator labels under other keys are kept. Raise `IngestError` before writing
    anything when the report is malformed, too large, or would mark most of the node's devices
    unhealthy without `"replace": true`. What changed is one row of the node's history.
    """
    devices, labels, matrix, replace = _validate_report(report)
    # The history names the reporter (the signed-in user, else "system"); a report that repeats
    # itself writes no row, since nothing in it changed.
    with transaction.atomic(), recording(reason="node report"):
        node = Node.objects.select_for_update().get(pk=node.pk)
        created = marked_unhealthy = became_healthy = 0
        health_changed = woke = False
        if devices is not None:
            created, created_healthy, marked_unhealthy, became_healthy = _upsert_devices(
                node, devices, replace
            )
            health_changed = bool(created or marked_unhealthy or became_healthy)
            # New healthy devices add capacity just as recovered ones do.
            woke = bool(became_healthy or created_healthy)
        labels_set = labels_removed = 0
        if labels is not None:
            labels_set, labels_removed = _replace_system_labels(node, labels)
        links = _sync_links(node, matrix) if matrix is not None else None
        said = _said(created, marked_unhealthy, became_healthy)
        if said:
            record_event(node, "report", said)
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
    )


def _said(created: int, unhealthy: int, healthy: int) -> str:
    """Return what a report did to the node's devices, in words for its history ("" for nothing).

    Labels have history rows of their own; links are written anew by every topology.
    """
    parts = [
        f"{n} {text}"
        for n, text in (
            (created, "devices added"),
            (unhealthy, "devices marked unhealthy"),
            (healthy, "devices healthy again"),
        )
        if n
    ]
    return "report: " + ", ".join(parts) if parts else ""


def apply_node_report_json(node_name: str, text: str) -> ReportResult:
    """Apply a JSON report to the node named `node_name`; raise `Node.DoesNotExist` for an unknown one."""
    try:
        report = json.loads(text)
    except json.JSONDecodeError as exc:
        raise IngestError(f"report: not valid JSON: {exc}") from exc
    return apply_node_report(Node.objects.get(name=node_name), report)


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

    DeviceLink.objects.filter(node=node).delete()
    rows = []
    for (i, j), (rank, nvlinks) in matrix.links.items():
        a, b = sorted((by_number[i], by_number[j]), key=lambda device: device.pk)
        rows.append(DeviceLink(node=node, device_a=a, device_b=b, rank=rank, nvlinks=nvlinks))
    DeviceLink.objects.bulk_create(rows)

    for number, numa in matrix.numa_affinity.items():
        device = by_number[number]
        if numa is not None and device.numa_node != numa:
            device.numa_node = numa
            device.save(update_fields=["numa_node"])
    return len(rows)


def _upsert_devices(node: Node, devices: list[_DeviceIn], replace: bool) -> tuple[int, int, int, int]:
    """Create or update the reported devices and mark the rest unhealthy.

    Return the counts: created, created healthy, marked unhealthy, became healthy.
    """
    existing = {d.uuid: d for d in Device.objects.select_for_update().filter(node=node).order_by("pk")}
    elsewhere = (
        Device.objects.filter(uuid__in=[d.uuid for d in devices])
        .exclude(node=node)
        .select_related("node")
        .order_by("uuid")
        .first()
    )
    if elsewhere is not None:
        raise IngestError(
            f"devices: {elsewhere.uuid} belongs to node {elsewhere.node.name}, not {node.name}",
            code="CONFLICT",
        )

    reported = {d.uuid for d in devices}
    new = [d for d in devices if d.uuid not in existing]
    if len(existing) + len(new) > MAX_DEVICES:
        raise IngestError(
            f"devices: node {node.name} would have {len(existing) + len(new)} devices; at most {MAX_DEVICES}"
        )
    for n, item in enumerate(devices):
        if item.uuid not in existing and item.index is None:
            raise IngestError(f"devices[{n}].index: required for a new device ({item.uuid})")
    healthy_now = [d for d in existing.values() if d.healthy]
    left_out = [d for d in healthy_now if d.uuid not in reported]
    if not replace and left_out and 2 * len(left_out) > len(healthy_now):
        raise IngestError(
            f"devices: the report leaves out {len(left_out)} of the node's {len(healthy_now)} healthy "
            'devices, which would mark them unhealthy; send "replace": true if they are gone'
        )

    created = created_healthy = became_healthy = marked_unhealthy = 0
    saved: dict[str, Device] = {}
    # Parents first, so that children can point at their rows.
    for item in sorted(devices, key=lambda d: d.parent is not None):
        parent = saved[item.parent] if item.parent is not None else None
        device = existing.get(item.uuid)
        if device is None:
            device = Device.objects.create(
                node=node,
                uuid=item.uuid,
                device_class=item.device_class or "gpu",
                parent=parent,
                index=item.index,
                numa_node=item.numa_node,
                attributes=item.attributes or {},
                healthy=item.healthy,
                bookable=True,
            )
            created += 1
            created_healthy += item.healthy
        else:
            if item.healthy and not device.healthy:
                became_healthy += 1
            elif device.healthy and not item.healthy:
                marked_unhealthy += 1
            if item.device_class is not None:
                device.device_class = item.device_class
            device.parent = parent
            if item.index is not None:
                device.index = item.index
            if item.has_numa:
                device.numa_node = item.numa_node
            if item.attributes is not None:
                device.attributes = item.attributes
            device.healthy = item.healthy
            # `bookable` is the operator's to set; a report never changes it.
            device.save(
                update_fields=["device_class", "parent", "index", "numa_node", "attributes", "healthy"]
            )
        saved[item.uuid] = device

    missing = [d.pk for uuid, d in existing.items() if uuid not in saved and d.healthy]
    marked_unhealthy += Device.objects.filter(pk__in=missing).update(healthy=False)
    return created, created_healthy, marked_unhealthy, became_healthy


def _replace_system_labels(node: Node, labels: dict[str, str]) -> tuple[int, int]:
    """Write reported labels as system labels and drop unreported system ones; return the counts."""
    current = {label.key: label for label in NodeLabel.objects.filter(node=node)}
    written = 0
    for key, value in labels.items():
        label = current.get(key)
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


def _validate_report(
    report: Any,
) -> tuple[list[_DeviceIn] | None, dict[str, str] | None, TopoMatrix | None, bool]:
    if not isinstance(report, dict):
        raise IngestError("report: must be a JSON object")
    unknown = sorted(set(report) - _REPORT_FIELDS)
    if unknown:
        raise IngestError(
            f"report: unknown field {unknown[0]!r} (expected devices, labels, topology, replace)"
        )
    replace = report.get("replace", False)
    if not isinstance(replace, bool):
        raise IngestError("replace: must be true or false")
    devices = _validate_devices(report["devices"]) if "devices" in report else None
    labels = _validate_labels(report["labels"]) if "labels" in report else None
    matrix = None
    if "topology" in report:
        if not isinstance(report["topology"], str):
            raise IngestError("topology: must be the text of `nvidia-smi topo -m`")
        try:
            matrix = parse_topo_matrix(report["topology"])
        except TopologyParseError as exc:
            raise IngestError(f"topology: {exc}") from exc
    return devices, labels, matrix, replace


def _validate_devices(raw: Any) -> list[_DeviceIn]:
    if not isinstance(raw, list):
        raise IngestError("devices: must be a list")
    if len(raw) > MAX_DEVICES:
        raise IngestError(f"devices: {len(raw)} devices; a report lists at most {MAX_DEVICES}")
    devices: list[_DeviceIn] = []
    for n, item in enumerate(raw):
        where = f"devices[{n}]"
        if not isinstance(item, dict):
            raise IngestError(f"{where}: must be an object")
        unknown = sorted(set(item) - _DEVICE_FIELDS)
        if unknown:
            raise IngestError(f"{where}.{unknown[0]}: unknown field")
        uuid = item.get("uuid")
        if not isinstance(uuid, str) or not _UUID_RE.match(uuid) or len(uuid) > _UUID_MAX:
            raise IngestError(
                f"{where}.uuid: must be at most {_UUID_MAX} letters, digits and . _ : / + - "
                "(no spaces or line breaks)"
            )
        device_class = item.get("class")
        if device_class is not None and (
            not isinstance(device_class, str)
            or not _CLASS_RE.match(device_class)
            or len(device_class) > _CLASS_MAX
        ):
            raise IngestError(
                f"{where}.class: must be at most {_CLASS_MAX} letters, digits and . _ + - (no spaces or line breaks)"
            )
        index = item.get("index")
        if index is not None and (not _is_int(index) or not 0 <= index <= _POSITIVE_INT_MAX):
            raise IngestError(f"{where}.index: must be a non-negative integer")
        numa = item.get("numaNode")
        if numa is not None and (not _is_int(numa) or not 0 <= numa <= MAX_NUMA_NODE):
            raise IngestError(f"{where}.numaNode: must be an integer from 0 to {MAX_NUMA_NODE}, or null")
        parent = item.get("parent")
        if parent is not None and not isinstance(parent, str):
            raise IngestError(f"{where}.parent: must be a device uuid or null")
        healthy = item.get("healthy", True)
        if not isinstance(healthy, bool):
            raise IngestError(f"{where}.healthy: must be true or false")
        attributes = item.get("attributes")
        if attributes is not None and not isinstance(attributes, dict):
            raise IngestError(f"{where}.attributes: must be an object")
        devices.append(
            _DeviceIn(uuid, device_class, index, numa, "numaNode" in item, parent, healthy, attributes)
        )

    by_uuid: dict[str, _DeviceIn] = {}
    for n, device in enumerate(devices):
        if device.uuid in by_uuid:
            raise IngestError(f"devices[{n}].uuid: {device.uuid} is listed twice")
        by_uuid[device.uuid] = device
    gpu_indexes: dict[int, str] = {}
    for n, device in enumerate(devices):
        if device.parent is not None:
            parent = by_uuid.get(device.parent)
            if parent is None or parent is device:
                raise IngestError(
                    f"devices[{n}].parent: {device.parent} is not another device of this report"
                )
            # One level of partitioning (GPU → MIG slice) is all there is; it also rules out cycles.
            if parent.parent is not None:
                raise IngestError(f"devices[{n}].parent: {device.parent} is itself a partition")
        elif device.device_class in ("gpu", None) and device.index is not None:
            # Topology rows name GPUs by index, so two whole GPUs may not share one.
            if device.index in gpu_indexes:
                raise IngestError(
                    f"devices[{n}].index: {gpu_indexes[device.index]} already has gpu index {device.index}"
                )
            gpu_indexes[device.index] = device.uuid
    return devices


def _validate_labels(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise IngestError("labels: must be an object of key: value strings")
    if len(raw) > MAX_LABELS:
        raise IngestError(f"labels: {len(raw)} labels; a report sets at most {MAX_LABELS}")
    for key, value in raw.items():
        if not isinstance(key, str):
            raise IngestError(f"labels[{key!r}]: keys must be strings")
        try:
            validate_label_key(key)
        except ValidationError as exc:
            raise IngestError(f"labels[{key!r}]: {' '.join(exc.messages)}") from exc
        if not isinstance(value, str) or len(value) > _LABEL_VALUE_MAX:
            raise IngestError(
                f"labels[{key!r}]: the value must be a string of at most {_LABEL_VALUE_MAX} characters"
            )
    return dict(raw)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
