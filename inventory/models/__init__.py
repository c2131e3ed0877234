"""Inventory models: what exists."""

from .devices import Device, DeviceLink
from .nodes import (
    Node,
    NodeCondition,
    NodeImageCache,
    NodeLabel,
    NodeRefusal,
    NodeReport,
    NodeResource,
    NodeTaint,
)
from .samples import DeviceSample
from .tenancy import Pool, PoolGeneration, Site, Tenant

__all__ = [
    "Device",
    "DeviceLink",
    "DeviceSample",
    "Node",
    "NodeCondition",
    "NodeImageCache",
    "NodeLabel",
    "NodeRefusal",
    "NodeReport",
    "NodeResource",
    "NodeTaint",
    "Pool",
    "PoolGeneration",
    "Site",
    "Tenant",
]
