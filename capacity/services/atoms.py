"""A node's atoms as people read them: the move's reason and the idle check's evidence name them so."""

from __future__ import annotations

from collections.abc import Iterable

from inventory.models import Device


def atoms_text(node: str, uuids: Iterable[str]) -> str:
    """Return a node's atoms as people read them: "GPU 0–3", "GPU 0, 2", "MIG 1/0, 1/1" (GPU/slice).

    Sixteen UUIDs told a tenant less than this and filled its page.
    """
    rows = Device.objects.filter(node__name=node, uuid__in=list(uuids)).values_list(
        "device_class", "index", "parent__index"
    )
    whole: dict[str, list[int]] = {}
    slices: list[tuple[int, int]] = []
    for device_class, index, parent in rows:
        if parent is None:
            whole.setdefault(device_class, []).append(index)
        else:
            slices.append((parent, index))
    parts = [f"{'GPU' if c == 'gpu' else c} {_ranges(sorted(ns))}" for c, ns in sorted(whole.items())]
    if slices:
        parts.append("MIG " + ", ".join(f"{p}/{i}" for p, i in sorted(slices)))
    return "; ".join(parts) or "nothing"


def _ranges(numbers: list[int]) -> str:
    """Return 0, 1, 2, 3, 5 as "0–3, 5"."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}–{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)
