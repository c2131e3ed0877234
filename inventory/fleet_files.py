"""Read a fleet dump (a directory or a tar file) into the nvidia-smi texts of each node.

Pure: no Django, no database. The layout, one directory per node, named by the node::

    fleet/
      dgx-h100-01/
        nvidia-smi-q.xml    # nvidia-smi -q -x
        nvidia-smi-L.txt    # nvidia-smi -L
        topo-m.txt          # nvidia-smi topo -m
      dgx-a100-01/
        ...

Each file is optional, but a node needs at least one. A tar file (plain, .tar.gz, .tar.bz2, .tar.xz)
holds the same, either the node directories at its top (`tar -C fleet -cf fleet.tar .`) or inside one
top directory (`tar -cf fleet.tar fleet`). A node whose directory holds anything else (a misspelt
`topo_m.txt`, a subdirectory) fails with that named, so that a file is never silently left out.
Hidden files (`.DS_Store`) are skipped. Nothing is extracted to disk.
"""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

__all__ = ["FILE_NAMES", "MAX_FILE_BYTES", "FleetReadError", "NodeFiles", "read_fleet", "valid_node_name"]

# File name -> the NodeFiles field it fills.
FILE_NAMES = {"nvidia-smi-q.xml": "smi_q", "nvidia-smi-L.txt": "smi_l", "topo-m.txt": "topo"}
MAX_FILE_BYTES = 4 * 1024 * 1024
# \A and \Z: `$` would let a trailing newline through ("ams1-dgx-05\n" as a second node).
_NODE_NAME_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_NODE_NAME_MAX = 200


class FleetReadError(ValueError):
    """The path as a whole cannot be read as a fleet (missing, not a directory or tar, no nodes)."""


@dataclass
class NodeFiles:
    """The nvidia-smi outputs of one node, each labelled for error messages (`n1/topo-m.txt`)."""

    name: str
    smi_q: str | None = None
    smi_l: str | None = None
    topo: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    problem: str | None = None  # why the node's files could not be read; the node then fails
    # What to send when MIG slices need `nvidia-smi -L` and it is missing (the API says nvidiaSmi.list).
    missing_list: str | None = None

    def label(self, kind: str) -> str:
        """Return how messages name this node's file of `kind` (smi_q, smi_l, topo)."""
        if kind in self.labels:
            return self.labels[kind]
        file_name = next(name for name, k in FILE_NAMES.items() if k == kind)
        return f"{self.name}/{file_name}"

    def list_hint(self) -> str:
        """Return what to add when `nvidia-smi -L` is missing, in the words of this node's path."""
        if self.missing_list is not None:
            return self.missing_list
        return f"add {self.label('smi_l')} (what `nvidia-smi -L` prints on the node)"


def valid_node_name(name: str) -> str | None:
    """Return why `name` cannot name a node, or None."""
    if not _NODE_NAME_RE.match(name) or len(name) > _NODE_NAME_MAX:
        return (
            f"{name[:80]!r} is not a node name (letters, digits, '.', '_' and '-', starting with a letter "
            f"or digit, at most {_NODE_NAME_MAX} characters)"
        )
    return None


def read_fleet(path: str | Path) -> list[NodeFiles]:
    """Return the nodes of a fleet directory or tar file, by name; raise `FleetReadError` for the path."""
    path = Path(path)
    if not path.exists():
        raise FleetReadError(f"no file or directory {str(path)!r}")
    if path.is_dir():
        nodes = _read_directory(path)
    elif tarfile.is_tarfile(path):
        nodes = _read_tar(path)
    else:
        raise FleetReadError(f"{str(path)!r} is neither a directory nor a tar file")
    if not nodes:
        raise FleetReadError(f"{str(path)!r} holds no node directories")
    return sorted(nodes.values(), key=lambda node: node.name)


def _add(node: NodeFiles, file_name: str, data: bytes | None, size: int) -> None:
    """Put one file's text into `node`, or record why it cannot be read (first problem wins)."""
    if node.problem is not None:
        return
    where = f"{node.name}/{file_name}"
    kind = FILE_NAMES.get(file_name)
    if kind is None:
        expected = ", ".join(FILE_NAMES)
        node.problem = f"{where}: not a file import_fleet reads (expected {expected})"
        return
    if size > MAX_FILE_BYTES or data is None:
        node.problem = f"{where}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB"
        return
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        node.problem = f"{where}: not UTF-8 text (byte {exc.start})"
        return
    if "\x00" in text:
        node.problem = f"{where}: holds a NUL byte; not nvidia-smi text output"
        return
    setattr(node, kind, text)


def _node(nodes: dict[str, NodeFiles], name: str) -> NodeFiles:
    if name not in nodes:
        nodes[name] = NodeFiles(name=name, problem=valid_node_name(name))
    return nodes[name]


def _read_directory(path: Path) -> dict[str, NodeFiles]:
    nodes: dict[str, NodeFiles] = {}
    for entry in sorted(path.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_symlink():
            # A link may point anywhere on the machine: only what lies in the directory is read.
            raise FleetReadError(f"{entry.name}: a symbolic link; the fleet directory holds real directories")
        if not entry.is_dir():
            raise FleetReadError(
                f"{entry.name}: not a node directory (the path holds one directory per node)"
            )
        node = _node(nodes, entry.name)
        for item in sorted(entry.iterdir()):
            if item.name.startswith("."):
                continue
            if item.is_symlink():
                node.problem = node.problem or f"{entry.name}/{item.name}: a symbolic link, not a file"
                continue
            if not item.is_file():
                node.problem = node.problem or f"{entry.name}/{item.name}: a directory, not a file"
                continue
            size = item.stat().st_size
            _add(node, item.name, item.read_bytes() if size <= MAX_FILE_BYTES else None, size)
    return nodes


def _read_tar(path: Path) -> dict[str, NodeFiles]:
    nodes: dict[str, NodeFiles] = {}
    try:
        with tarfile.open(path) as tar:
            members = [m for m in tar.getmembers() if not m.isdir()]
            paths = [_member_parts(m.name) for m in members]
            # `tar -cf fleet.tar fleet` puts every file one level deeper, under one top directory.
            tops = {parts[0] for parts in paths if parts}
            if len(tops) == 1 and all(len(parts) == 3 for parts in paths if parts):
                paths = [parts[1:] for parts in paths]
            for member, parts in zip(members, paths, strict=True):
                if not parts or parts[-1].startswith("."):
                    continue
                if len(parts) != 2:
                    raise FleetReadError(
                        f"{member.name}: not <node>/<file> (the tar holds one directory per node)"
                    )
                node = _node(nodes, parts[0])
                if not member.isfile():
                    node.problem = node.problem or f"{'/'.join(parts)}: not a regular file"
                    continue
                data = None
                if member.size <= MAX_FILE_BYTES:
                    extracted = tar.extractfile(member)
                    data = extracted.read() if extracted is not None else b""
                _add(node, parts[1], data, member.size)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise FleetReadError(f"{str(path)!r}: cannot read the tar file: {exc}") from exc
    return nodes


def _member_parts(name: str) -> tuple[str, ...]:
    parts = tuple(p for p in PurePosixPath(name).parts if p not in ("", "."))
    if name.startswith("/") or ".." in parts:
        raise FleetReadError(f"{name}: an absolute path or '..' in the tar file is refused")
    return parts
