"""JSON shapes of nodes and of what operators and node reports send, for rendering and for OpenAPI.

The serializers render plain dicts (camelCase keys, as the API speaks); the `*_items` helpers build
those dicts from rows the view has already fetched, so rendering runs no queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rest_framework import serializers

from inventory.api.report_shapes import (
    MAX_PROCESS_OWNERS,
    ImageField,
    ProcessOwnerSerializer,
    UtilizationSerializer,
)
from inventory.changelog import REASON_MAX
from inventory.models import Device, DeviceLink, Node, NodeCondition, NodeLabel, NodeTaint
from inventory.states import ANOTHER_TENANT, ANOTHER_TENANTS_DEDICATION, DEDICATED_PREFIX, NAMES, node_states
from inventory.viewer import Viewer


class KeywordFieldsMixin:
    """Let a serializer render keys that are Python keywords: `class_` renders as `class`."""

    def get_fields(self):
        fields = super().get_fields()
        return {name.removesuffix("_"): field for name, field in fields.items()}


class LabelSerializer(serializers.Serializer):
    """A node label; `bc.dev/` keys count only with source system."""

    key = serializers.CharField()
    value = serializers.CharField(allow_blank=True)
    source = serializers.ChoiceField(choices=NodeLabel.Source.choices)


class TaintSerializer(serializers.Serializer):
    """A node taint."""

    key = serializers.CharField()
    value = serializers.CharField(allow_blank=True)
    effect = serializers.ChoiceField(choices=NodeTaint.Effect.choices)


class DeviceSerializer(KeywordFieldsMixin, serializers.Serializer):
    """A device: a whole GPU, a MIG slice (with its parent GPU), or another atom."""

    uuid = serializers.CharField()
    class_ = serializers.CharField(help_text="Device class: gpu, or a MIG profile such as mig-1g.10gb.")
    index = serializers.IntegerField()
    parent = serializers.CharField(allow_null=True, help_text="The uuid of the GPU a MIG slice belongs to.")
    numaNode = serializers.IntegerField(allow_null=True)
    attributes = serializers.DictField()
    healthy = serializers.BooleanField()
    bookable = serializers.BooleanField()
    verified = serializers.BooleanField(
        help_text="False for hardware a node reported after its first report: counted nowhere and never "
        "offered until an operator accepts it (POST /api/v1/nodes/NODE/devices/accept)."
    )


class LinkSerializer(serializers.Serializer):
    """The link between two GPUs, as `nvidia-smi topo -m` ranks it."""

    a = serializers.CharField(help_text="Device uuid.")
    b = serializers.CharField(help_text="Device uuid.")
    rank = serializers.ChoiceField(choices=DeviceLink.Rank.choices)
    nvlinks = serializers.IntegerField()


class NodeConditionSerializer(serializers.Serializer):
    """An observed condition of the node."""

    type = serializers.CharField()
    status = serializers.ChoiceField(choices=NodeCondition.Status.choices)
    reason = serializers.CharField(allow_blank=True)
    message = serializers.CharField(allow_blank=True)
    lastTransitionAt = serializers.DateTimeField()


class NodeResourceSerializer(serializers.Serializer):
    """A scalar resource of the node, such as vcpu."""

    resource = serializers.CharField()
    allocatable = serializers.FloatField()
    ratio = serializers.FloatField()
    allocated = serializers.IntegerField(help_text="Claimed now.")
    capacity = serializers.IntegerField(help_text="floor(allocatable × ratio).")


class NodeSummarySerializer(serializers.Serializer):
    """A node as the node list shows it."""

    name = serializers.CharField()
    pool = serializers.CharField()
    site = serializers.CharField()
    state = serializers.ChoiceField(
        choices=NAMES,
        help_text="The first state the node is in, as the caller sees it (the vocabulary of the pages).",
    )
    states = serializers.ListField(
        child=serializers.ChoiceField(choices=NAMES),
        help_text="Every state the node is in, in vocabulary order; schedulable: the caller's work may go here now.",
    )
    role = serializers.ChoiceField(choices=Node.Role.choices)
    provisionState = serializers.ChoiceField(choices=Node.ProvisionState.choices)
    connectivity = serializers.ChoiceField(choices=Node.Connectivity.choices)
    trust = serializers.ChoiceField(choices=Node.Trust.choices)
    cordoned = serializers.BooleanField()
    maintenance = serializers.BooleanField()
    converged = serializers.BooleanField()
    ownerTenant = serializers.CharField(allow_null=True)
    noScheduleReasons = serializers.ListField(child=serializers.CharField())
    labels = LabelSerializer(many=True)
    taints = TaintSerializer(many=True)
    deviceCounts = serializers.DictField(
        child=serializers.IntegerField(), help_text="Atoms per device class."
    )
    freeGpusNow = serializers.IntegerField(
        help_text="GPUs the caller could book now: healthy, bookable, not booked, on a node schedulable to it."
    )


class HistoryEntrySerializer(serializers.Serializer):
    """One change of a node, its taints or labels: when, who, what and why."""

    at = serializers.DateTimeField()
    actor = serializers.CharField(help_text='A username, a command such as "command:cordon", or "system".')
    action = serializers.CharField(
        help_text="cordon, uncordon, drain, maintenance-on, taint-add, label-set, …"
    )
    change = serializers.CharField(help_text='In words, such as "label rack: r1 → r2".')
    reason = serializers.CharField(allow_blank=True)


class StateChangesSerializer(serializers.Serializer):
    """The change that put the node in each state it is in now (null: not in it, or not recorded)."""

    cordoned = HistoryEntrySerializer(allow_null=True)
    maintenance = HistoryEntrySerializer(allow_null=True)
    drain = HistoryEntrySerializer(allow_null=True)


class ReportSeenSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    by = serializers.CharField(help_text="The credential's user: node.NAME for the node's own.")


class RefusalSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    code = serializers.CharField(help_text="The refusal's code: INVALID_INPUT, CONFLICT, FORBIDDEN, ...")
    message = serializers.CharField()
    by = serializers.CharField(help_text="Who sent the refused report.")


class NodeDetailSerializer(NodeSummarySerializer):
    """A node with its devices, links, conditions and resources."""

    devices = DeviceSerializer(many=True)
    links = LinkSerializer(many=True)
    conditions = NodeConditionSerializer(many=True)
    resources = NodeResourceSerializer(many=True)
    stateChanges = StateChangesSerializer(
        allow_null=True,
        help_text="Who cordoned, drained or put the node in maintenance, when and why (operators; null for tenants).",
    )
    lastReport = ReportSeenSerializer(
        allow_null=True, help_text="The last report applied (operators; null for tenants, or none yet)."
    )
    lastRefusal = RefusalSerializer(
        allow_null=True,
        help_text="The last report refused, which changed nothing (operators; null for tenants, or none).",
    )


# Every operator action takes one; the history keeps it.
def reason_field() -> serializers.CharField:
    """Return the optional `reason` every operator action takes (kept in the node's history)."""
    return serializers.CharField(
        max_length=REASON_MAX, allow_blank=True, required=False, help_text="Why (kept in the node's history)."
    )


class ReasonInputSerializer(serializers.Serializer):
    """Why (optional)."""

    reason = reason_field()


class MaintenanceInputSerializer(serializers.Serializer):
    """Maintenance on (true) or off (false)."""

    on = serializers.BooleanField()
    reason = reason_field()


# Label and taint keys: the selector key syntax.
KEY_PATTERN = r"^[A-Za-z][A-Za-z0-9._/-]*$"


class TaintInputSerializer(serializers.Serializer):
    """A taint to add or replace (effect NoSchedule by default)."""

    key = serializers.RegexField(KEY_PATTERN, max_length=253)
    value = serializers.CharField(max_length=253, allow_blank=True, required=False)
    effect = serializers.ChoiceField(choices=NodeTaint.Effect.choices, required=False)
    reason = reason_field()


class DedicateInputSerializer(serializers.Serializer):
    """The tenant to dedicate the node to, or null."""

    tenant = serializers.CharField(allow_null=True, help_text="A tenant slug, or null to end the dedication.")
    reason = reason_field()


class LabelInputSerializer(serializers.Serializer):
    """An operator label to set."""

    key = serializers.RegexField(KEY_PATTERN, max_length=253, help_text="Not under bc.dev/ (inventory's).")
    value = serializers.CharField(max_length=253, allow_blank=True, required=False)
    reason = reason_field()


class ReportedDeviceSerializer(KeywordFieldsMixin, serializers.Serializer):
    """A device as a node reports it."""

    uuid = serializers.CharField(max_length=100)
    class_ = serializers.CharField(max_length=50, required=False)
    index = serializers.IntegerField(min_value=0, required=False)
    numaNode = serializers.IntegerField(min_value=0, allow_null=True, required=False)
    parent = serializers.CharField(allow_null=True, required=False)
    healthy = serializers.BooleanField(required=False)
    attributes = serializers.DictField(required=False)
    utilization = UtilizationSerializer(required=False, help_text="This minute's sample.")


class NvidiaSmiSerializer(serializers.Serializer):
    """The texts a node's nvidia-smi printed, read as the fleet import reads them."""

    query = serializers.CharField(required=False, help_text="`nvidia-smi -q -x`.")
    list = serializers.CharField(required=False, help_text="`nvidia-smi -L` (MIG slices' UUIDs).")
    topo = serializers.CharField(required=False, help_text="`nvidia-smi topo -m`.")


class NodeReportInputSerializer(serializers.Serializer):
    """A node report: each section present is the whole truth for it."""

    devices = ReportedDeviceSerializer(many=True, required=False)
    labels = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False)
    topology = serializers.CharField(required=False, help_text="The text of `nvidia-smi topo -m`.")
    nvidiaSmi = NvidiaSmiSerializer(
        required=False, help_text="The devices and topology as nvidia-smi prints them; not with devices."
    )
    images = serializers.ListField(
        child=ImageField(),
        max_length=512,
        required=False,
        help_text='Images the node holds: references (ready), or {"image", "state"} objects; the whole cache.',
    )
    replace = serializers.BooleanField(
        required=False, help_text="Needed to mark more than half of the node's healthy devices unhealthy."
    )
    processOwners = serializers.ListField(
        child=ProcessOwnerSerializer(),
        max_length=MAX_PROCESS_OWNERS,
        required=False,
        help_text='Whose the GPUs\' processes are: [{"pid", "reservationId"}], as the agent attributes them '
        "(a process left out: not attributed). Left out: the report attributes nothing.",
    )


class TopologyInputSerializer(serializers.Serializer):
    """The topology matrix as JSON."""

    text = serializers.CharField(help_text="The text of `nvidia-smi topo -m`.")


class ReportResultSerializer(serializers.Serializer):
    """What a node report changed."""

    devices = serializers.IntegerField()
    created = serializers.IntegerField()
    markedUnhealthy = serializers.IntegerField()
    becameHealthy = serializers.IntegerField()
    labelsSet = serializers.IntegerField()
    labelsRemoved = serializers.IntegerField()
    links = serializers.IntegerField(allow_null=True, help_text="null when the report had no topology.")
    images = serializers.IntegerField(allow_null=True, help_text="null when the report had no images.")
    samples = serializers.IntegerField(
        help_text="Devices whose utilization was stored as this minute's sample."
    )
    unverified = serializers.IntegerField(
        help_text="Of the devices created, those that wait for an operator to accept them."
    )


class TopologyResultSerializer(serializers.Serializer):
    """How many GPU links the matrix gave."""

    links = serializers.IntegerField()


def label_items(labels: Iterable[NodeLabel]) -> list[dict]:
    return [{"key": x.key, "value": x.value, "source": x.source} for x in labels]


def taint_items(taints: Iterable[NodeTaint]) -> list[dict]:
    return [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]


def device_items(devices: Iterable[Device], uuids: Mapping[int, str]) -> list[dict]:
    """Return device dicts; `uuids` maps device pk to uuid (for parents)."""
    return [
        {
            "uuid": d.uuid,
            "class": d.device_class,
            "index": d.index,
            "parent": uuids.get(d.parent_id) if d.parent_id else None,
            "numaNode": d.numa_node,
            "attributes": d.attributes,
            "healthy": d.healthy,
            "bookable": d.bookable,
            "verified": d.verified,
        }
        for d in devices
    ]


def link_items(links: Iterable[DeviceLink], uuids: Mapping[int, str]) -> list[dict]:
    return [
        {
            "a": uuids.get(x.device_a_id, ""),
            "b": uuids.get(x.device_b_id, ""),
            "rank": x.rank,
            "nvlinks": x.nvlinks,
        }
        for x in links
    ]


def condition_items(conditions: Iterable[NodeCondition]) -> list[dict]:
    return [
        {
            "type": c.type,
            "status": c.status,
            "reason": c.reason,
            "message": c.message,
            "lastTransitionAt": c.last_transition_at,
        }
        for c in conditions
    ]


def _hidden_dedication(node: Node, viewer: Viewer) -> str | None:
    """Return the tenant a node is dedicated to when the caller may not read its name, else None."""
    if viewer.sees_every_tenant:
        return None
    dedicated = next((t.value for t in node.taints.all() if t.key == "dedicated"), None)
    return dedicated if dedicated is not None and not viewer.allows(dedicated) else None


def node_summary(
    node: Node,
    *,
    device_counts: Mapping[str, int],
    free_gpus_now: int,
    viewer: Viewer,
) -> dict:
    """Return the summary dict of a node whose pool, site, owner, labels and taints are loaded.

    The states are as the viewer (the caller) sees them.
    """
    states = [s.name for s in node_states(node, viewer)]
    hidden = _hidden_dedication(node, viewer)
    return {
        "name": node.name,
        "pool": node.pool.slug,
        "site": node.pool.site.slug,
        "state": states[0],
        "states": states,
        "role": node.role,
        "provisionState": node.provision_state,
        "connectivity": node.connectivity,
        "trust": node.trust,
        "cordoned": node.cordoned,
        "maintenance": node.maintenance,
        "converged": node.converged,
        "ownerTenant": node.owner_tenant.slug if node.owner_tenant_id else None,
        "noScheduleReasons": [
            ANOTHER_TENANTS_DEDICATION if hidden and r == f"{DEDICATED_PREFIX}{hidden}" else r
            for r in node.no_schedule_reasons
        ],
        "labels": label_items(node.labels.all()),
        "taints": [
            {**t, "value": ANOTHER_TENANT} if hidden and t["key"] == "dedicated" else t
            for t in taint_items(node.taints.all())
        ],
        "deviceCounts": dict(device_counts),
        "freeGpusNow": free_gpus_now,
    }


class AcceptDevicesInputSerializer(serializers.Serializer):
    uuids = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        max_length=256,
        help_text="The unverified devices to accept; left out, all of the node's.",
    )
    reason = reason_field()


class AcceptDevicesResultSerializer(serializers.Serializer):
    accepted = serializers.ListField(child=serializers.CharField(), help_text="The uuids accepted.")
    node = NodeDetailSerializer()
