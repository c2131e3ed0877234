"""Device attributes: each known key with its type and bounds, and what any other key may hold.

Pure: no Django, no database. Every path that writes what a node says about its devices (the node
report's `devices` and `nvidiaSmi` forms, `import_topology --report`, the fleet import) checks the
attributes here before anything is written (docs/api.md, "Device attributes"). A key this table does
not know is kept when its value is a scalar within the same bounds (a string of at most 200
printable characters, a finite number within JavaScript's safe integers, a boolean): a node may say
more than Berth reads, but never an object, a list, null, or a value no page or selector can hold.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "ATTRIBUTES",
    "MAX_ATTRIBUTES",
    "MAX_KEY_LENGTH",
    "MAX_NUMBER",
    "MAX_TEXT",
    "AttributeProblem",
    "AttributeSpec",
    "check_attributes",
]

MAX_TEXT: Final = 200
# JavaScript's safe integers, as the API's JSON parser bounds every number (config.api.parsers).
MAX_NUMBER: Final = 2**53 - 1
MAX_ATTRIBUTES: Final = 64  # per device: nvidia-smi gives 11; a page row must stay small
MAX_KEY_LENGTH: Final = 63
# The syntax of selector and label keys: a selector must be able to name any key a node sends.
_KEY_RE: Final = re.compile(r"\A[A-Za-z][A-Za-z0-9._/-]*\Z")
_MAX_VRAM_GIB: Final = 16 * 1024  # 16 TiB: more than any GPU's memory
_MAX_NUMA: Final = 1023  # inventory.topology.MAX_NUMA_NODE, kept free of that module's imports


class AttributeProblem(ValueError):
    """An attribute a node may not set; `key` names it and the message says why."""

    def __init__(self, key: str, message: str) -> None:
        self.field = f"attributes.{key}" if key else "attributes"
        super().__init__(f"{self.field}: {message}")
        self.key = key
        self.problem = message


@dataclass(frozen=True)
class AttributeSpec:
    """One known key: its type ("string", "integer" or "boolean"), bounds and meaning."""

    kind: str
    meaning: str
    low: int = 0
    high: int = 0
    choices: tuple[str, ...] = ()

    def bounds(self) -> str:
        """Return the bounds in words, as the docs' table shows them."""
        if self.kind == "boolean":
            return "true or false"
        if self.kind == "integer":
            return f"{self.low:,} to {self.high:,}"
        if self.choices:
            return "one of " + ", ".join(self.choices)
        return f"at most {MAX_TEXT} printable characters"


def _text(meaning: str, *choices: str) -> AttributeSpec:
    return AttributeSpec("string", meaning, choices=choices)


# Every key Berth itself reads or writes (fleet import, node reports, seed_demo, selectors in the docs).
ATTRIBUTES: Final[Mapping[str, AttributeSpec]] = {
    "productName": _text("the product as nvidia-smi names it (NVIDIA H100 80GB HBM3)"),
    "gpuProduct": _text("the product selectors name; derived from productName"),
    "gpuModel": _text("the model without vendor or variant (H100, A10G, T4); derived from productName"),
    "architecture": _text("the architecture, lower case (hopper, ampere)"),
    "computeCapability": _text("CUDA compute capability (9.0)"),
    "migProfile": _text("a MIG slice's profile (3g.40gb)"),
    "migMode": _text("a GPU's current MIG mode", "enabled", "disabled", "n/a"),
    "pciBusId": _text("the GPU's PCI bus id (00000000:18:00.0)"),
    "migCapable": AttributeSpec("boolean", "whether the GPU can be split into MIG slices"),
    "vramGiB": AttributeSpec("integer", "memory as the GPU is sold (24 for an A10G)", 0, _MAX_VRAM_GIB),
    "vramMiB": AttributeSpec("integer", "usable memory as nvidia-smi reports it", 0, _MAX_VRAM_GIB * 1024),
    "numaNode": AttributeSpec("integer", "the NUMA node (seed_demo writes it as an attribute)", 0, _MAX_NUMA),
}


def _text_problem(value: object) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    if len(value) > MAX_TEXT or not value.isprintable():
        # isprintable() refuses control, format (bidi overrides) and separator characters but space.
        return f"must be at most {MAX_TEXT} printable characters (no control or line-break characters)"
    return None


def value_problem(key: str, value: object) -> str | None:
    """Return why `value` may not be stored under `key`, or None when it may."""
    spec = ATTRIBUTES.get(key)
    if spec is None:
        if isinstance(value, bool):
            return None
        if isinstance(value, int | float):
            if isinstance(value, float) and not math.isfinite(value):
                return "must be a finite number"
            return None if abs(value) <= MAX_NUMBER else f"must be between -{MAX_NUMBER} and {MAX_NUMBER}"
        if isinstance(value, str):
            return _text_problem(value)
        return "must be a string, a number or a boolean (no objects, lists or null)"
    if spec.kind == "boolean":
        return None if isinstance(value, bool) else "must be true or false"
    if spec.kind == "integer":
        if not _whole(value):
            return "must be a whole number"
        return None if spec.low <= value <= spec.high else f"must be from {spec.low} to {spec.high}"
    problem = _text_problem(value)
    if problem is None and spec.choices and value not in spec.choices:
        return "must be one of " + ", ".join(spec.choices)
    return problem


def _whole(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, float):
        return math.isfinite(value) and value.is_integer()
    return isinstance(value, int)


def check_attributes(raw: object) -> dict[str, Any]:
    """Return the attributes to store (80.0 as 80); raise `AttributeProblem` at the first bad key."""
    if not isinstance(raw, dict):
        raise AttributeProblem("", "must be an object")
    if len(raw) > MAX_ATTRIBUTES:
        raise AttributeProblem("", f"{len(raw)} keys; at most {MAX_ATTRIBUTES} per device")
    checked: dict[str, Any] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or len(key) > MAX_KEY_LENGTH or not _KEY_RE.match(key):
            shown = key[:40] if isinstance(key, str) else key
            raise AttributeProblem(
                f"{shown!r}",
                f"keys start with a letter and hold at most {MAX_KEY_LENGTH} letters, digits and . _ / -",
            )
        problem = value_problem(key, value)
        if problem is not None:
            raise AttributeProblem(key, problem)
        spec = ATTRIBUTES.get(key)
        checked[key] = int(value) if spec is not None and spec.kind == "integer" else value
    return checked
