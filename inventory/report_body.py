"""Read and check a node report's body before anything is written (docs/api.md, "The node report").

A report carries its devices either as `devices` (a list of objects) or as `nvidiaSmi` (the texts of
`nvidia-smi -q -x`, `nvidia-smi -L` and `nvidia-smi topo -m`, read by the fleet import's parsers:
what the reference agent sends), never both; then `labels`, `topology`, `images`, `replace` and
`processOwners` (whose processes run on the GPUs, inventory.attribution).
Every problem raises `IngestError` naming the field, so that a bad report writes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from inventory.attributes import AttributeProblem, check_attributes
from inventory.attribution import read_owners
from inventory.canonical import canonical_attributes
from inventory.errors import IngestError
from inventory.fleet_files import NodeFiles
from inventory.fleet_read import FleetInputError, read_node
from inventory.models import Device, NodeImageCache, NodeLabel
from inventory.nvsmi import MAX_MIB, MAX_PID, MAX_PROCESSES, SmiProcess, SmiUsage, check_process_sum
from inventory.topology import MAX_NUMA_NODE, TopologyParseError, TopoMatrix, parse_topo_matrix
from inventory.validators import validate_label_key

__all__ = ["MAX_DEVICES", "MAX_IMAGES", "MAX_LABELS", "DeviceIn", "Report", "read_report"]

_REPORT_FIELDS = ("devices", "nvidiaSmi", "labels", "topology", "images", "replace", "processOwners")
_SMI_FIELDS = ("query", "list", "topo")
# A DGX has 8 GPUs and up to 56 MIG slices; 256 devices leaves room for any real box, and bounds
# what one report (and one node page) can cost.
MAX_DEVICES = 256
MAX_LABELS = 64
MAX_IMAGES = 512
# GPU and MIG UUIDs, and device classes (gpu, mig-3g.40gb, mig-1g.10gb+me): no spaces, no line breaks.
_UUID_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._:/+-]*\Z")
_CLASS_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._+-]*\Z")
# An image reference (registry/name:tag or @sha256:...): printable, no spaces.
_IMAGE_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._:/@+-]*\Z")
_DEVICE_FIELDS = {"uuid", "class", "index", "numaNode", "parent", "healthy", "attributes", "utilization"}
_USAGE_FIELDS = {"gpuPercent", "memoryUsedMiB", "processes"}
# Field limits of the models, checked here so that bad input fails before anything is written.
_UUID_MAX = Device._meta.get_field("uuid").max_length
_CLASS_MAX = Device._meta.get_field("device_class").max_length
_LABEL_VALUE_MAX = NodeLabel._meta.get_field("value").max_length
_IMAGE_MAX = NodeImageCache._meta.get_field("image").max_length
_IMAGE_STATES = tuple(NodeImageCache.State.values)
_POSITIVE_INT_MAX = 2_147_483_647


@dataclass(frozen=True)
class DeviceIn:
    """One reported device; a field left out (None) keeps what is stored."""

    uuid: str
    device_class: str | None  # None: left out (kept; "gpu" for a new device)
    index: int | None  # None: left out (kept; required for a new device)
    numa_node: int | None
    has_numa: bool
    parent: str | None
    healthy: bool
    attributes: dict[str, Any] | None  # None: left out (kept; {} for a new device)
    merge_attributes: bool = False  # nvidia-smi's keys over the stored ones (operators' keys kept)
    usage: SmiUsage | None = None  # what it was doing: stored as this minute's sample


@dataclass(frozen=True)
class Report:
    """A checked report: each section None when the report left it out."""

    devices: list[DeviceIn] | None
    labels: dict[str, str] | None
    matrix: TopoMatrix | None
    images: dict[str, str] | None  # image -> state
    replace: bool
    owners: dict[int, int] | None = None  # pid -> reservation (inventory.attribution); None: not said


def read_report(report: Any, node_name: str) -> Report:
    """Check a report body and return its sections; raise `IngestError` naming the first problem."""
    if not isinstance(report, dict):
        raise IngestError("report: must be a JSON object")
    unknown = sorted(set(report) - set(_REPORT_FIELDS))
    if unknown:
        raise IngestError(f"report: unknown field {unknown[0]!r} (expected {', '.join(_REPORT_FIELDS)})")
    replace = report.get("replace", False)
    if not isinstance(replace, bool):
        raise IngestError("replace: must be true or false")
    if "devices" in report and "nvidiaSmi" in report:
        raise IngestError("report: send devices or nvidiaSmi, not both")
    devices = _devices(report["devices"]) if "devices" in report else None
    matrix = None
    if "nvidiaSmi" in report:
        devices, matrix = _from_nvidia_smi(report["nvidiaSmi"], node_name)
    if "topology" in report:
        if matrix is not None:
            raise IngestError("topology: nvidiaSmi.topo already gives the topology")
        if not isinstance(report["topology"], str):
            raise IngestError("topology: must be the text of `nvidia-smi topo -m`")
        try:
            matrix = parse_topo_matrix(report["topology"])
        except TopologyParseError as exc:
            raise IngestError(f"topology: {exc}") from exc
    labels = _labels(report["labels"]) if "labels" in report else None
    images = _images(report["images"]) if "images" in report else None
    owners = read_owners(report["processOwners"]) if "processOwners" in report else None
    return Report(devices, labels, matrix, images, replace, owners)


def _from_nvidia_smi(raw: Any, node_name: str) -> tuple[list[DeviceIn] | None, TopoMatrix | None]:
    """Read the texts of nvidia-smi as the fleet import does, cross-checked the same way."""
    if not isinstance(raw, dict) or not raw:
        raise IngestError('nvidiaSmi: must be an object with "query", "list" and/or "topo" texts')
    unknown = sorted(set(raw) - set(_SMI_FIELDS))
    if unknown:
        raise IngestError(f"nvidiaSmi.{unknown[0]}: unknown field (expected query, list, topo)")
    for key, value in raw.items():
        if not isinstance(value, str):
            raise IngestError(f"nvidiaSmi.{key}: must be the text nvidia-smi printed")
    files = NodeFiles(
        name=node_name,
        smi_q=raw.get("query"),
        smi_l=raw.get("list"),
        topo=raw.get("topo"),
        labels={"smi_q": "nvidiaSmi.query", "smi_l": "nvidiaSmi.list", "topo": "nvidiaSmi.topo"},
        missing_list=(
            "send what `nvidia-smi -L` prints as nvidiaSmi.list. The Berth agent sends it whenever "
            "`nvidia-smi -L` succeeds: on an agent's node, run `nvidia-smi -L` there to see why it fails "
            "(the agent logs it too)"
        ),
    )
    try:
        inventory = read_node(files)
    except FleetInputError as exc:
        raise IngestError(exc.message, code=exc.code) from None
    if inventory.gpus is None:
        return None, inventory.matrix
    wanted = [*inventory.gpus, *(inventory.slices or [])]
    if len(wanted) > MAX_DEVICES:
        raise IngestError(f"nvidiaSmi: {_devices_text(len(wanted))}; a report lists at most {MAX_DEVICES}")
    for w in wanted:
        _check_uuid(w.uuid, "nvidiaSmi")
    devices = [
        DeviceIn(w.uuid, w.device_class, w.index, None, False, w.parent, True, w.attributes, True, w.usage)
        for w in wanted
    ]
    return devices, inventory.matrix


def _check_uuid(uuid: Any, where: str) -> str:
    if not isinstance(uuid, str) or not _UUID_RE.match(uuid) or len(uuid) > _UUID_MAX:
        raise IngestError(
            f"{where}.uuid: must be at most {_UUID_MAX} letters, digits and . _ : / + - "
            "(no spaces or line breaks)"
        )
    return uuid


def _devices(raw: Any) -> list[DeviceIn]:
    if not isinstance(raw, list):
        raise IngestError("devices: must be a list")
    if len(raw) > MAX_DEVICES:
        raise IngestError(f"devices: {_devices_text(len(raw))}; a report lists at most {MAX_DEVICES}")
    devices: list[DeviceIn] = []
    for n, item in enumerate(raw):
        where = f"devices[{n}]"
        if not isinstance(item, dict):
            raise IngestError(f"{where}: must be an object")
        unknown = sorted(set(item) - _DEVICE_FIELDS)
        if unknown:
            raise IngestError(f"{where}.{unknown[0]}: unknown field")
        uuid = _check_uuid(item.get("uuid"), where)
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
        if attributes is not None:
            try:
                attributes = canonical_attributes(check_attributes(attributes))
            except AttributeProblem as exc:
                raise IngestError(f"{where}.{exc.field}: {exc.problem} (device {uuid})") from None
        usage = _usage(item["utilization"], f"{where}.utilization") if "utilization" in item else None
        devices.append(
            DeviceIn(
                uuid, device_class, index, numa, "numaNode" in item, parent, healthy, attributes, False, usage
            )
        )
    _check_family(devices)
    return devices


def _usage(raw: Any, where: str) -> SmiUsage:
    """Read a device's `utilization`: {"gpuPercent", "memoryUsedMiB", "processes": [{"pid", "usedMiB", "name"}]}."""
    if not isinstance(raw, dict):
        raise IngestError(f"{where}: must be an object")
    unknown = sorted(set(raw) - _USAGE_FIELDS)
    if unknown:
        raise IngestError(
            f"{where}.{unknown[0]}: unknown field (expected gpuPercent, memoryUsedMiB, processes)"
        )
    percent = raw.get("gpuPercent")
    if percent is not None and (
        not isinstance(percent, int | float) or isinstance(percent, bool) or not 0 <= percent <= 100
    ):
        raise IngestError(f"{where}.gpuPercent: must be a number from 0 to 100, or null")
    used = raw.get("memoryUsedMiB")
    if used is not None and (not _is_int(used) or not 0 <= used <= MAX_MIB):
        raise IngestError(
            f"{where}.memoryUsedMiB: must be a whole number of MiB from 0 to {MAX_MIB}, or null"
        )
    listed = raw.get("processes", [])
    if not isinstance(listed, list):
        raise IngestError(f"{where}.processes: must be a list")
    if len(listed) > MAX_PROCESSES:
        raise IngestError(f"{where}.processes: {len(listed)} processes; at most {MAX_PROCESSES} per device")
    processes = []
    for n, p in enumerate(listed):
        if not isinstance(p, dict) or not _is_int(p.get("pid")) or not 0 <= p["pid"] <= MAX_PID:
            raise IngestError(f"{where}.processes[{n}].pid: must be a process id (0 to {MAX_PID})")
        mib = p.get("usedMiB")
        if mib is not None and (not _is_int(mib) or not 0 <= mib <= MAX_MIB):
            raise IngestError(
                f"{where}.processes[{n}].usedMiB: must be a whole number of MiB from 0 to {MAX_MIB}, or null"
            )
        name = p.get("name", "")
        if not isinstance(name, str):
            raise IngestError(f"{where}.processes[{n}].name: must be a string")
        processes.append(SmiProcess(p["pid"], name[:200], mib))
    problem = check_process_sum(processes)
    if problem is not None:
        raise IngestError(f"{where}.processes: {problem}")
    return SmiUsage(round(percent) if percent is not None else None, used, tuple(processes))


def _check_family(devices: list[DeviceIn]) -> None:
    by_uuid: dict[str, DeviceIn] = {}
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


def _labels(raw: Any) -> dict[str, str]:
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


def _images(raw: Any) -> dict[str, str]:
    """Read `images`: image references (ready), or {"image", "state"} objects; the whole cache."""
    if not isinstance(raw, list):
        raise IngestError('images: must be a list of image references or {"image", "state"} objects')
    if len(raw) > MAX_IMAGES:
        raise IngestError(f"images: {len(raw)} images; a report lists at most {MAX_IMAGES}")
    images: dict[str, str] = {}
    for n, item in enumerate(raw):
        where = f"images[{n}]"
        if isinstance(item, dict):
            unknown = sorted(set(item) - {"image", "state"})
            if unknown:
                raise IngestError(f"{where}.{unknown[0]}: unknown field (expected image, state)")
            image, state = item.get("image"), item.get("state", "ready")
            if state not in _IMAGE_STATES:
                raise IngestError(f"{where}.state: must be one of {', '.join(_IMAGE_STATES)}")
        else:
            image, state = item, "ready"
        if not isinstance(image, str) or not _IMAGE_RE.match(image) or len(image) > _IMAGE_MAX:
            raise IngestError(f"{where}: an image reference of at most {_IMAGE_MAX} characters, no spaces")
        if image in images:
            raise IngestError(f"{where}: {image} is listed twice")
        images[image] = state
    return images


def _devices_text(count: int) -> str:
    return "1 device" if count == 1 else f"{count} devices"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
