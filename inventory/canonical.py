"""One canonical device: the attributes a GPU or MIG slice gets, whichever way it arrives.

Pure: no Django, no database. The fleet import and the node report's `nvidiaSmi` form build a GPU's
attributes with `gpu_attributes` and a slice's with `slice_attributes`; the report's `devices` form
passes what a node sent through `canonical_attributes`, which derives the same keys from
`productName` and `vramMiB`. So `gpuProduct`, `gpuModel` and `vramGiB` are the same for one GPU
from an agent, an API client or `import_fleet`.
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["canonical_attributes", "gpu_attributes", "gpu_model", "marketed_gib", "slice_attributes"]

_MIB_PER_GIB: Final = 1024
# Memory sizes GPUs are sold with, in GB. nvidia-smi reports less than the label (ECC, reserved
# memory: an A10G shows 23,028 MiB, a T4 15,360, a K80 11,441 per GPU, an L40S 46,068), so the
# sold size is the smallest of these the reported memory fits in.
_SOLD_GIB: Final = (
    1,
    2,
    3,
    4,
    5,
    6,
    8,
    10,
    11,
    12,
    16,
    20,
    24,
    32,
    40,
    48,
    64,
    80,
    94,
    96,
    128,
    141,
    144,
    180,
    192,
    256,
    288,
)
_NAMED_GB_RE: Final = re.compile(r"(?<![0-9])([0-9]{1,4}) ?GB(?![A-Za-z0-9])")
_VENDOR_WORDS: Final = ("NVIDIA", "Tesla", "GeForce", "Quadro")
_SERIES_WORDS: Final = ("RTX", "GTX", "TITAN")
# Attributes a MIG slice takes from its GPU: what the hardware is, not what the whole GPU holds.
_INHERITED: Final = ("productName", "gpuProduct", "gpuModel", "architecture")


def marketed_gib(memory_mib: int, product_name: str = "") -> int:
    """Return the memory size the GPU is sold with, in GB, from what nvidia-smi reports in MiB.

    A size in the product's name (`H100 80GB`, `A100-SXM4-40GB`) wins when the reported memory is
    within 15 % below it; otherwise the smallest sold size the memory fits in (within 1 %).
    """
    if memory_mib <= 0:
        return 0
    gib = memory_mib / _MIB_PER_GIB
    for match in _NAMED_GB_RE.finditer(product_name):
        named = int(match.group(1))
        if named * 0.85 <= gib <= named * 1.01:
            return named
    for size in _SOLD_GIB:
        if gib <= size * 1.01:
            return size
    return round(gib)


def gpu_model(product_name: str) -> str:
    """Return the model without vendor, series or variant: `NVIDIA A100-SXM4-40GB` → `A100`.

    Words are joined by `-` so that a selector needs no quotes (`NVIDIA RTX A6000` → `RTX-A6000`).
    """
    words = [w for w in re.split(r"[\s_]+", product_name.strip()) if w]
    while len(words) > 1 and words[0] in _VENDOR_WORDS:
        words = words[1:]
    if not words:
        return product_name
    first = words[0].split("-")
    if first[0].upper() in _SERIES_WORDS:
        rest = first[1:] or words[1:2]
        return "-".join([first[0], *rest[:1]])
    return first[0]


def _derived(product_name: str) -> dict[str, Any]:
    return {"gpuProduct": product_name, "gpuModel": gpu_model(product_name)}


def gpu_attributes(
    product_name: str,
    memory_mib: int | None = None,
    mig_mode: str | None = None,
    pci_bus_id: str | None = None,
    architecture: str | None = None,
) -> dict[str, Any]:
    """Return a whole GPU's attributes from what nvidia-smi says of it (`-q -x`, or `-L`'s name)."""
    attributes: dict[str, Any] = {"productName": product_name, **_derived(product_name)}
    if mig_mode is not None:
        attributes["migCapable"] = mig_mode != "N/A"
        attributes["migMode"] = mig_mode.lower()
    if pci_bus_id is not None:
        attributes["pciBusId"] = pci_bus_id
    if memory_mib is not None:
        attributes["vramMiB"] = memory_mib
        attributes["vramGiB"] = marketed_gib(memory_mib, product_name)
    if architecture:
        attributes["architecture"] = architecture.lower()
    return attributes


def slice_attributes(gpu: dict[str, Any], profile: str) -> dict[str, Any]:
    """Return a MIG slice's attributes: its GPU's product and the profile's memory (3g.40gb: 40)."""
    inherited = {k: v for k, v in gpu.items() if k in _INHERITED}
    memory = int(profile.split(".")[-1].removesuffix("+me").removesuffix("gb"))
    return {**inherited, "migProfile": profile, "vramGiB": memory}


def canonical_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """Return checked attributes a node sent with the keys Berth derives filled in the one way.

    `productName` gives `gpuProduct` and `gpuModel`; `vramMiB` gives `vramGiB`. A derived key the
    node also sent is replaced, so that the same GPU reads the same however it was reported.
    """
    product = attributes.get("productName")
    result = dict(attributes)
    if isinstance(product, str) and product:
        result.update(_derived(product))
    memory = attributes.get("vramMiB")
    if isinstance(memory, int) and not isinstance(memory, bool) and "migProfile" not in attributes:
        result["vramGiB"] = marketed_gib(memory, product if isinstance(product, str) else "")
    return result
