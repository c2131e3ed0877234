"""How a node's assignments read in the OpenAPI schema (agents.assignments writes them)."""

from __future__ import annotations

from rest_framework import serializers

from capacity.port import Reservation
from inventory.api.serializers import KeywordFieldsMixin
from inventory.states import NAMES


class NodeFeedStateSerializer(serializers.Serializer):
    """The node's state as its agent reads it (as operators do)."""

    name = serializers.ChoiceField(choices=NAMES, help_text="The node's first state.")
    cordoned = serializers.BooleanField()
    maintenance = serializers.BooleanField()
    draining = serializers.BooleanField()
    lease = serializers.IntegerField(allow_null=True, help_text="The reservation leasing the whole node now.")


class IdleNoteSerializer(serializers.Serializer):
    """A booking marked Idle: what the agent writes to reservations/ID.idle."""

    since = serializers.DateTimeField(allow_null=True)
    message = serializers.CharField(allow_blank=True)
    keepWhenIdle = serializers.BooleanField()
    releaseAt = serializers.DateTimeField(allow_null=True, help_text="Null: never released for idleness.")


class HolderSerializer(serializers.Serializer):
    """Whose reservation holds a device."""

    reservationId = serializers.IntegerField(allow_null=True)
    tenantId = serializers.CharField(allow_null=True)
    instanceId = serializers.CharField(required=False, help_text="A gang member's instance.")


class HeldNowSerializer(HolderSerializer):
    """The reservation holding the device now."""

    priority = serializers.ChoiceField(choices=Reservation.Priority.choices)
    end = serializers.DateTimeField()
    idle = IdleNoteSerializer(allow_null=True)
    preemptAt = serializers.DateTimeField(allow_null=True, help_text="Spot work given notice: when it ends.")


class HeldNextSerializer(HolderSerializer):
    """The next reservation of the device."""

    start = serializers.DateTimeField()


class LentToSerializer(HolderSerializer):
    """Spot work running on the device while its idle owner lends it."""

    priority = serializers.ChoiceField(choices=Reservation.Priority.choices)
    end = serializers.DateTimeField()
    preemptAt = serializers.DateTimeField(allow_null=True)


class AssignedDeviceSerializer(KeywordFieldsMixin, serializers.Serializer):
    """One device of the node, who holds it now and next, and whom it is lent to."""

    uuid = serializers.CharField()
    index = serializers.IntegerField(allow_null=True)
    class_ = serializers.CharField(help_text="gpu, or a MIG profile such as mig-3g.40gb.")
    parent = serializers.CharField(allow_null=True, help_text="A MIG slice's GPU.")
    now = HeldNowSerializer(allow_null=True)
    next = HeldNextSerializer(allow_null=True)
    lent = LentToSerializer(allow_null=True)


class NodeAssignmentsSerializer(serializers.Serializer):
    """A node's devices with the reservation holding each now and the next one."""

    node = serializers.CharField()
    asOf = serializers.DateTimeField()
    state = NodeFeedStateSerializer()
    devices = AssignedDeviceSerializer(many=True)
