"""How a node report's samples, images and process owners read in the OpenAPI schema
(inventory.report_body and inventory.attribution check them)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from inventory.attribution import MAX_OWNED
from inventory.models import NodeImageCache
from inventory.nvsmi import MAX_MIB, MAX_PID, MAX_PROCESSES


class SampledProcessSerializer(serializers.Serializer):
    """A process on the GPU this minute."""

    pid = serializers.IntegerField(min_value=0, max_value=MAX_PID)
    usedMiB = serializers.IntegerField(min_value=0, max_value=MAX_MIB, allow_null=True, required=False)
    name = serializers.CharField(allow_blank=True, required=False)


class UtilizationSerializer(serializers.Serializer):
    """A device's sample of this minute."""

    gpuPercent = serializers.FloatField(min_value=0, max_value=100, allow_null=True, required=False)
    memoryUsedMiB = serializers.IntegerField(min_value=0, max_value=MAX_MIB, allow_null=True, required=False)
    processes = SampledProcessSerializer(many=True, required=False, max_length=MAX_PROCESSES)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "minimum": 1},
            {"type": "string", "description": "A port instance's id: not a reservation, not attributed."},
        ]
    }
)
class OwnerField(serializers.JSONField):
    """A reservation id, or a port instance's id."""


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string", "description": "An image reference: ready."},
            {
                "type": "object",
                "properties": {
                    "image": {"type": "string"},
                    "state": {"type": "string", "enum": list(NodeImageCache.State.values)},
                },
                "required": ["image"],
            },
        ]
    }
)
class ImageField(serializers.JSONField):
    """An image reference (ready), or {"image", "state"}."""


class ProcessOwnerSerializer(serializers.Serializer):
    """Whose reservation a GPU process runs for, as the agent attributes it."""

    pid = serializers.IntegerField(min_value=0, max_value=MAX_PID)
    reservationId = OwnerField()


MAX_PROCESS_OWNERS = MAX_OWNED
