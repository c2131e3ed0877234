"""Inventory models: what exists."""

from .devices import Device, DeviceLink
from .nodes import Node, NodeCondition, NodeImageCache, NodeLabel, NodeResource, NodeTaint
from .tenancy import Pool, Site, Tenant

__all__ = [
    "Device",
    "DeviceLink",
    "Node",
    "NodeCondition",
    "NodeImageCache",
    "NodeLabel",
    "NodeResource",
    "NodeTaint",
    "Pool",
    "Site",
    "Tenant",
]
