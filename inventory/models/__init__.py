"""Inventory models: what exists."""

from .devices import Device, DeviceLink
from .nodes import (
    DeviceSample,
    Node,
    NodeCondition,
    NodeImageCache,
    NodeLabel,
    NodeReport,
    NodeResource,
    NodeTaint,
)
from .tenancy import Pool, PoolGeneration, Site, Tenant

__all__ = [
    "Device",
    "DeviceLink",
    "DeviceSample",
    "Node",
    "NodeCondition",
    "NodeImageCache",
    "NodeLabel",
    "NodeReport",
    "NodeResource",
    "NodeTaint",
    "Pool",
    "PoolGeneration",
    "Site",
    "Tenant",
]
