"""Parse what `nvidia-smi -q -x` (XML) and `nvidia-smi -L` print about a node's GPUs and MIG slices.

Pure: no Django, no database. `inventory.fleet` combines them with `nvidia-smi topo -m`
(`inventory.topology`) into the devices and links of one node.

`nvidia-smi -q -x` lists one `<gpu id="<PCI bus id>">` per GPU in nvidia-smi's index order (by PCI bus),
with `<product_name>`, `<uuid>`, `<fb_memory_usage><total>81559 MiB</total>` and
`<mig_mode><current_mig>Enabled</current_mig>`; its `<mig_devices>` carry no UUIDs, which is why MIG
slices come from `nvidia-smi -L`::

    GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-c470858f-b360-587c-83e5-c376010a7032)
      MIG 3g.40gb     Device  0: (UUID: MIG-2844d289-b552-5090-93bd-141b0fe67670)

The XML is read with expat building an `xml.etree` tree, with defusedxml's care: the DOCTYPE line
nvidia-smi writes (`<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">`) is allowed, but no
internal DTD subset, no entity declaration and no external entity is, and nothing is ever fetched.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from xml.parsers import expat

__all__ = [
    "ListedGpu",
    "ListedMig",
    "SmiGpu",
    "SmiParseError",
    "SmiProcess",
    "SmiQuery",
    "SmiUsage",
    "check_process_sum",
    "parse_smi_list",
    "parse_smi_query",
]

MAX_XML_CHARS = 4 * 1024 * 1024
# 16 TiB in MiB: more than any GPU's memory. Every number read is bounded before int() (whose
# 4,300-digit limit raises ValueError) and before the database (whose integer columns hold 2**31).
MAX_MIB = 16 * 1024 * 1024
MAX_PID = 2**31 - 1
_GPU_UUID_RE = re.compile(r"^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# Current drivers print MIG-<uuid>; R450/R460 printed MIG-GPU-<gpu uuid>/<gpu instance>/<compute instance>.
_MIG_UUID_RE = re.compile(
    r"^MIG-(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/\d+/\d+)$"
)
_MEMORY_RE = re.compile(r"^([0-9]+) MiB$")
_MIG_MODES = ("Enabled", "Disabled", "N/A")
_L_GPU_RE = re.compile(r"^GPU ([0-9]{1,4}): (.+) \(UUID: ([^)]*)\)$")
# A GPU instance profile (1g.10gb, 1g.10gb+me, 1g.20gb), or a compute instance within one (1c.3g.40gb).
_L_MIG_RE = re.compile(
    r"^\s+MIG ((?:[0-9]{1,2}c\.)?[0-9]{1,2}g\.[0-9]{1,4}gb(?:\+me)?)\s+Device\s+([0-9]{1,4}): \(UUID: ([^)]*)\)$"
)


class SmiParseError(ValueError):
    """The text is not nvidia-smi output this parser understands; `line` and `where` say where."""

    def __init__(self, message: str, line: int | None = None, where: str | None = None) -> None:
        place = f"line {line}" if line is not None else ""
        if where is not None:
            place += f", {where}" if place else where
        super().__init__(f"{place}: {message}" if place else message)
        self.problem = message
        self.line = line
        self.where = where


@dataclass(frozen=True)
class SmiProcess:
    """A process on a GPU, from `<processes><process_info>`."""

    pid: int
    name: str
    used_mib: int | None


@dataclass(frozen=True)
class SmiUsage:
    """What a GPU was doing when nvidia-smi looked: utilization, memory used, its processes.

    None where nvidia-smi prints N/A (a MIG-enabled GPU has no whole-GPU utilization).
    """

    gpu_percent: int | None
    memory_used_mib: int | None
    processes: tuple[SmiProcess, ...]


@dataclass(frozen=True)
class SmiGpu:
    """One `<gpu>` of `nvidia-smi -q -x`; `index` is its position, nvidia-smi's own numbering."""

    index: int
    uuid: str
    product_name: str
    memory_mib: int | None
    mig_mode: str  # current_mig: Enabled, Disabled, or N/A (a GPU that cannot be split)
    pending_mig: str
    mig_devices: int
    pci_bus_id: str
    architecture: str | None
    line: int
    usage: SmiUsage | None = None


@dataclass(frozen=True)
class SmiQuery:
    """What `nvidia-smi -q -x` says about a node's GPUs."""

    driver_version: str | None
    cuda_version: str | None
    gpus: list[SmiGpu]


@dataclass(frozen=True)
class ListedMig:
    """A MIG slice line of `nvidia-smi -L`."""

    index: int
    profile: str
    uuid: str
    line: int


@dataclass(frozen=True)
class ListedGpu:
    """A GPU line of `nvidia-smi -L`, with the MIG slices listed under it."""

    index: int
    name: str
    uuid: str
    line: int
    migs: list[ListedMig] = field(default_factory=list)


def parse_smi_list(text: str) -> list[ListedGpu]:
    """Parse `nvidia-smi -L` into its GPUs and their MIG slices; raise `SmiParseError` at the first bad line."""
    gpus: list[ListedGpu] = []
    uuids: set[str] = set()
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r").rstrip()
        if not line.strip():
            continue
        if m := _L_GPU_RE.match(line):
            index, name, uuid = int(m.group(1)), m.group(2).strip(), m.group(3)
            if index != len(gpus):
                raise SmiParseError(f"GPU {index} where GPU {len(gpus)} was expected", line_no)
            if not _GPU_UUID_RE.match(uuid):
                raise SmiParseError(f"{uuid!r} is not a GPU UUID", line_no, "UUID")
            _unique(uuid, uuids, line_no)
            gpus.append(ListedGpu(index, name, uuid, line_no))
        elif m := _L_MIG_RE.match(line):
            if not gpus:
                raise SmiParseError("a MIG device before any GPU line", line_no)
            profile, index, uuid = m.group(1), int(m.group(2)), m.group(3)
            migs = gpus[-1].migs
            if index != len(migs):
                raise SmiParseError(
                    f"MIG Device {index} where Device {len(migs)} of GPU {gpus[-1].index} was expected",
                    line_no,
                )
            if not _MIG_UUID_RE.match(uuid):
                raise SmiParseError(f"{uuid!r} is not a MIG UUID", line_no, "UUID")
            _unique(uuid, uuids, line_no)
            migs.append(ListedMig(index, profile, uuid, line_no))
        else:
            raise SmiParseError(
                f"not a line of `nvidia-smi -L` (expected 'GPU n: <name> (UUID: GPU-…)' or "
                f"'  MIG <profile> Device n: (UUID: MIG-…)'): {line.strip()[:80]!r}",
                line_no,
            )
    if not gpus:
        raise SmiParseError("no GPU lines: expected the output of `nvidia-smi -L`")
    return gpus


def _unique(uuid: str, seen: set[str], line_no: int) -> None:
    if uuid in seen:
        raise SmiParseError(f"{uuid} is listed twice", line_no, "UUID")
    seen.add(uuid)


class _Refused(Exception):
    """Raised from an expat handler for input that is refused (DTD subset, entities)."""


def _parse_xml(text: str) -> tuple[ET.Element, dict[int, int]]:
    """Return the root element and each element's line (by id), refusing DTD subsets and entities."""
    builder = ET.TreeBuilder()
    lines: dict[int, int] = {}
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def start(tag: str, attrs: dict[str, str]) -> None:
        lines[id(builder.start(tag, attrs))] = parser.CurrentLineNumber

    def doctype(name: str, system_id: str | None, public_id: str | None, has_internal_subset: bool) -> None:
        if has_internal_subset:
            raise _Refused("a DOCTYPE with an internal subset is refused (entities could be declared there)")

    def entity(*args: object) -> None:
        raise _Refused("entity declarations are refused")

    def external(*args: object) -> int:
        raise _Refused("external entities are refused")

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.StartDoctypeDeclHandler = doctype
    parser.EntityDeclHandler = entity
    parser.UnparsedEntityDeclHandler = entity
    parser.ExternalEntityRefHandler = external
    try:
        parser.Parse(text, True)
    except _Refused as exc:
        raise SmiParseError(str(exc), parser.CurrentLineNumber) from None
    except expat.ExpatError as exc:
        raise SmiParseError(f"not well-formed XML: {expat.ErrorString(exc.code)}", exc.lineno) from None
    return builder.close(), lines


def parse_smi_query(text: str) -> SmiQuery:
    """Parse `nvidia-smi -q -x` into its GPUs; raise `SmiParseError` naming the line and element."""
    if len(text) > MAX_XML_CHARS:
        raise SmiParseError(f"larger than {MAX_XML_CHARS // (1024 * 1024)} MiB; not nvidia-smi output")
    if not text.strip():
        raise SmiParseError("empty: expected the output of `nvidia-smi -q -x`")
    root, lines = _parse_xml(text)
    if root.tag != "nvidia_smi_log":
        raise SmiParseError(
            f"the root element is <{root.tag}>, not <nvidia_smi_log>: expected `nvidia-smi -q -x`",
            lines[id(root)],
        )

    def line_of(element: ET.Element) -> int:
        return lines[id(element)]

    def text_of(parent: ET.Element, path: str, *, required: bool = True) -> str | None:
        found = parent.find(path)
        if found is None:
            if required:
                raise SmiParseError(
                    f"no <{path}> in this <{parent.tag}>", line_of(parent), f"element {parent.tag}"
                )
            return None
        return (found.text or "").strip()

    # attached_gpus comes before the GPUs in the file, so it is checked first.
    attached = text_of(root, "attached_gpus", required=False)
    if attached is not None and attached != str(len(root.findall("gpu"))):
        where = root.find("attached_gpus")
        raise SmiParseError(
            f"says {attached} GPUs are attached but the file lists {len(root.findall('gpu'))}: a truncated file?",
            line_of(where) if where is not None else None,
            "element attached_gpus",
        )
    gpus: list[SmiGpu] = []
    uuids: set[str] = set()
    for index, gpu in enumerate(root.findall("gpu")):
        uuid = text_of(gpu, "uuid") or ""
        uuid_line = line_of(gpu.find("uuid"))  # type: ignore[arg-type]
        if not _GPU_UUID_RE.match(uuid):
            raise SmiParseError(f"{uuid!r} is not a GPU UUID", uuid_line, "element gpu/uuid")
        if uuid in uuids:
            raise SmiParseError(f"{uuid} is listed twice", uuid_line, "element gpu/uuid")
        uuids.add(uuid)
        product = text_of(gpu, "product_name") or ""
        if not product:
            raise SmiParseError("empty product name", line_of(gpu), "element gpu/product_name")
        memory = None
        total = gpu.find("fb_memory_usage/total")
        if total is not None:
            memory = _mib(total, line_of, "gpu/fb_memory_usage/total", required=True)
        # Drivers before MIG (R450) print no <mig_mode>: such a GPU cannot be split.
        mig_mode = text_of(gpu, "mig_mode/current_mig", required=False) or "N/A"
        pending = text_of(gpu, "mig_mode/pending_mig", required=False) or mig_mode
        for value, path in ((mig_mode, "current_mig"), (pending, "pending_mig")):
            if value not in _MIG_MODES:
                found = gpu.find(f"mig_mode/{path}")
                raise SmiParseError(
                    f"{value!r} is not a MIG mode (expected Enabled, Disabled or N/A)",
                    line_of(found if found is not None else gpu),
                    f"element gpu/mig_mode/{path}",
                )
        gpus.append(
            SmiGpu(
                index=index,
                uuid=uuid,
                product_name=product,
                memory_mib=memory,
                mig_mode=mig_mode,
                pending_mig=pending,
                mig_devices=len(gpu.findall("mig_devices/mig_device")),
                pci_bus_id=text_of(gpu, "pci/pci_bus_id", required=False) or gpu.get("id", ""),
                architecture=text_of(gpu, "product_architecture", required=False),
                line=line_of(gpu),
                usage=_usage(gpu, line_of),
            )
        )
    if not gpus:
        raise SmiParseError("no <gpu> elements: nvidia-smi found no GPU on this node", line_of(root))
    return SmiQuery(
        driver_version=text_of(root, "driver_version", required=False),
        cuda_version=text_of(root, "cuda_version", required=False),
        gpus=gpus,
    )


MAX_PROCESSES = 256  # per GPU; more is not a GPU's process list
_PERCENT_RE = re.compile(r"^([0-9]{1,3}) %$")


def _usage(gpu: ET.Element, line_of) -> SmiUsage | None:
    """Read a `<gpu>`'s utilization, memory used and processes; None when it says none of them."""
    util = gpu.find("utilization/gpu_util")
    used = gpu.find("fb_memory_usage/used")
    listed = gpu.findall("processes/process_info")
    if util is None and used is None and not listed:
        return None
    percent = None
    if util is not None and (util.text or "").strip() not in ("N/A", ""):
        m = _PERCENT_RE.match((util.text or "").strip())
        if m is None or int(m.group(1)) > 100:
            raise SmiParseError(
                f"{(util.text or '').strip()!r} is not a utilization from 0 to 100 %",
                line_of(util),
                "element gpu/utilization/gpu_util",
            )
        percent = int(m.group(1))
    if len(listed) > MAX_PROCESSES:
        raise SmiParseError(
            f"{len(listed)} processes on one GPU; at most {MAX_PROCESSES}",
            line_of(listed[0]),
            "element gpu/processes",
        )
    processes = []
    for info in listed:
        pid = (info.findtext("pid") or "").strip()
        # [0-9], not isdigit(): "²" is a digit to isdigit() and not to int().
        if not re.fullmatch(r"[0-9]{1,10}", pid) or int(pid) > MAX_PID:
            raise SmiParseError(
                f"{pid[:40]!r} is not a process id", line_of(info), "element gpu/processes/process_info/pid"
            )
        used_memory = _mib(info.find("used_memory"), line_of, "gpu/processes/process_info/used_memory")
        processes.append(
            SmiProcess(int(pid), (info.findtext("process_name") or "").strip()[:200], used_memory)
        )
    problem = check_process_sum(processes)
    if problem is not None:
        raise SmiParseError(problem, line_of(listed[0]), "element gpu/processes")
    return SmiUsage(percent, _mib(used, line_of, "gpu/fb_memory_usage/used"), tuple(processes))


def check_process_sum(processes: list[SmiProcess]) -> str | None:
    """Return why the processes' memory cannot be one GPU's (its sum is stored), or None."""
    total = sum(p.used_mib or 0 for p in processes)
    if total > MAX_MIB:
        return f"the processes use {total:,} MiB in all, more than any GPU has (at most {MAX_MIB:,})"
    return None


def _mib(element: ET.Element | None, line_of, where: str, *, required: bool = False) -> int | None:
    """Return an element's `123 MiB` as 123; None for absent, N/A or unreadable unless `required`.

    A number too large for any GPU is refused either way: it would be stored.
    """
    if element is None:
        return None
    text = (element.text or "").strip()
    m = _MEMORY_RE.match(text)
    if m is None:
        if required:
            raise SmiParseError(
                f"{text[:40]!r} is not an amount of MiB", line_of(element), f"element {where}"
            )
        return None
    digits = m.group(1)
    if len(digits) > 8 or int(digits) > MAX_MIB:
        shown = digits if len(digits) <= 20 else f"a {len(digits):,}-digit number of"
        raise SmiParseError(
            f"{shown} MiB is more than any GPU has (at most {MAX_MIB:,})",
            line_of(element),
            f"element {where}",
        )
    return int(digits)
