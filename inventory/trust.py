"""What a node may say: who sends a report, what a node's own credential may change, and the trace
a refused report leaves.

A GPU node runs its tenants' code, often as root: its agent's credential is as safe as the node.
So, as Kubernetes' NodeRestriction does for a kubelet, a report through the node's own credential
may say what the node observes (health, use, images, attributes, system labels under `bc.dev/`)
but not what an operator or the books decided: hardware it adds after its first report waits,
unverified, for an operator to accept it; it may not change the shape (class, MIG parent, index)
of a device that is booked; it never touches an operator's labels, taints, dedication or
`bookable` choice. Operators (the API with an operator's credential, `import_topology`, fleet
import, the admin) keep full rights. docs/api.md, "What a node may say", is the table.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from inventory.changelog import record_event, recording
from inventory.errors import IngestError, InventoryError
from inventory.models import Device, Node, NodeRefusal
from inventory.signals import devices_booked, node_state_changed, report_refused

__all__ = [
    "Reporter",
    "accept_devices",
    "booked",
    "held_elsewhere",
    "record_refusal",
    "refuse_reshape",
    "shape_changes",
]


def held_elsewhere(node_name: str, uuids: list[str]) -> str | None:
    """Return why one of these devices may not be node_name's (it belongs to another), or None.

    A device uuid names one device in the whole inventory: a report or a fleet import that lists
    another node's device is refused (CONFLICT) rather than moving it.
    """
    elsewhere = (
        Device.objects.filter(uuid__in=uuids)
        .exclude(node__name=node_name)
        .select_related("node")
        .order_by("uuid")
        .first()
    )
    if elsewhere is None:
        return None
    return f"{elsewhere.uuid} belongs to node {elsewhere.node.name}, not {node_name}"


@dataclass(frozen=True)
class Reporter:
    """Who sends a report: its name (a user, or a command) and whether it is the node's own credential."""

    name: str
    node: bool = False

    @classmethod
    def operator(cls, name: str) -> Reporter:
        """Return an operator reporter (full rights)."""
        return cls(name=name, node=False)

    @classmethod
    def node_credential(cls, name: str) -> Reporter:
        """Return the node's own credential as a reporter (the node's status only)."""
        return cls(name=name, node=True)

    @property
    def kind(self) -> str:
        return "node" if self.node else "operator"


def shape_changes(existing: dict[str, Device], items) -> dict[int, str]:
    """Return device pk -> what the report changes of that device's shape, in words.

    The shape is the class, the MIG parent and the index; a new MIG slice under a device changes
    that device's shape too (a GPU split into slices is no longer a whole-GPU atom).
    """
    uuid_of = {d.pk: uuid for uuid, d in existing.items()}
    changes: dict[int, list[str]] = {}
    for item in items:
        device = existing.get(item.uuid)
        if device is None:
            parent = existing.get(item.parent) if item.parent is not None else None
            if parent is not None:
                changes.setdefault(parent.pk, []).append(f"a new MIG slice {item.uuid}")
            continue
        parts = changes.setdefault(device.pk, [])
        if item.device_class is not None and item.device_class != device.device_class:
            parts.append(f"class {device.device_class} → {item.device_class}")
        was = uuid_of.get(device.parent_id) if device.parent_id else None
        if item.parent != was:
            parts.append(f"MIG parent {was or 'none'} → {item.parent or 'none'}")
        if item.index is not None and item.index != device.index:
            parts.append(f"index {device.index} → {item.index}")
    return {pk: ", ".join(parts) for pk, parts in changes.items() if parts}


def booked(device_ids) -> dict[int, list[str]]:
    """Return device pk -> the live or future bookings holding it ("reservation 12"), as capacity says."""
    found: dict[int, list[str]] = {}
    for _receiver, answer in devices_booked.send(sender=Device, device_ids=sorted(set(device_ids))):
        for pk, names in (answer or {}).items():
            found.setdefault(pk, []).extend(names)
    return found


def refuse_reshape(node: Node, existing: dict[str, Device], changes: dict[int, str], held) -> IngestError:
    """Return the CONFLICT a node credential's report hears for changing the shape of booked devices.

    It names each device, the change and the reservations; an operator's report may make it.
    """
    uuid_of = {d.pk: uuid for uuid, d in existing.items()}
    said = "; ".join(
        f"{uuid_of[pk]} ({changes[pk]}) is booked by {', '.join(sorted(set(held[pk])))}"
        for pk in sorted(held)
    )
    return IngestError(
        f"devices: a node report may not change the class, MIG parent or index of a booked device: {said}. "
        f"Drain the node first (POST /api/v1/nodes/{node.name}/drain), or have an operator send the report",
        code="CONFLICT",
    )


def record_refusal(node: Node, error: IngestError, by: Reporter, *, now=None) -> None:
    """Keep the node's last refused report (in a transaction of its own) and count it.

    The refused report's own transaction has rolled back by now; this one only writes the refusal.
    """
    now = now or timezone.now()
    with transaction.atomic():
        NodeRefusal.objects.update_or_create(
            node_id=node.pk,
            defaults={"at": now, "code": error.code, "message": str(error)[:2000], "by": by.name[:150]},
        )
    report_refused.send(sender=Node, node=node.name, code=error.code)


def accept_devices(node_name: str, uuids: list[str] | None = None, *, reason: str = "") -> list[str]:
    """Accept the node's unverified devices (all, or those named): they become verified and bookable.

    Return the uuids accepted, in order. A named uuid that is not an unverified device of the node
    is refused (NOT_FOUND), and nothing is accepted.
    """
    with transaction.atomic(), recording(reason=reason or "devices accepted"):
        node = Node.objects.select_for_update().filter(name=node_name).first()
        if node is None:
            raise InventoryError("NOT_FOUND", f"no node {node_name}")
        waiting = (
            Device.objects.select_for_update().filter(node=node, verified=False).order_by("index", "uuid")
        )
        if uuids is not None:
            found = {d.uuid: d for d in waiting.filter(uuid__in=uuids)}
            missing = [u for u in uuids if u not in found]
            if missing:
                raise InventoryError(
                    "NOT_FOUND", f"uuids: node {node_name} has no unverified device {', '.join(missing[:5])}"
                )
            devices = list(found.values())
        else:
            devices = list(waiting)
        if not devices:
            return []
        # One update, then capacity told once: a save per device would refresh the rollups per device.
        Device.objects.filter(pk__in=[d.pk for d in devices]).update(verified=True, bookable=True)
        accepted = sorted(d.uuid for d in devices)
        record_event(node, "accept", f"accepted {_devices(len(accepted))}: {', '.join(accepted[:8])}")
        node_state_changed.send(sender=Node, pool_ids={node.pool_id}, woke=True)
        return accepted


def _devices(n: int) -> str:
    return f"{n} device" if n == 1 else f"{n} devices"
