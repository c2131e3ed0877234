"""Fleet import: many nodes' nvidia-smi outputs in one request, through the service import_fleet uses.

`POST /api/v1/fleet/import` with `{"pool", "dryRun", "replaceDevices", "keepNuma", "nodes": [{"name",
"smiQ", "smiL", "topo"}]}` answers each node's result and diff. Operators only. A bad node fails alone
(its result says why, naming field, line and cell); a malformed request is refused whole (400).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import RequestDataTooBig
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, get_encoding
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from config.api.auth import IsOperator
from config.api.base import BerthAPIView
from config.api.parsers import MAX_DEPTH, check_document
from config.api.schema import errors
from inventory.errors import InventoryError
from inventory.fleet import FleetOptions, import_fleet
from inventory.fleet_files import NodeFiles, valid_node_name
from inventory.fleet_read import FleetInputError

# Each node is a transaction of its own: 64 nodes (4.1 MiB) took 2.0 s here; with the cores shared by
# six test suites a node took ~0.2 s, so about 14 s, still inside a worker's 30 s timeout. Larger
# fleets send batches. A DGX's `nvidia-smi -q -x` is about 60 KiB, so 8 MiB leaves room.
MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_NODES = 64
_FIELDS = {"pool", "dryRun", "replaceDevices", "keepNuma", "nodes"}
# JSON field -> NodeFiles field.
_FILES = {"smiQ": "smi_q", "smiL": "smi_l", "topo": "topo"}


class FleetJSONParser(BaseParser):
    """Strict JSON with the fleet import's own size limit, larger than DATA_UPLOAD_MAX_MEMORY_SIZE.

    Not a JSONParser subclass on purpose: DRF reads `request.body` for those, which enforces the
    global limit (2.5 MiB by default) before any parser sees the stream. Only operators get here:
    permissions are checked before the body is read.
    """

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read(MAX_BODY_BYTES + 1) if stream is not None else b""
        if len(raw) > MAX_BODY_BYTES:
            raise RequestDataTooBig(f"the request body is larger than {MAX_BODY_BYTES // (1024 * 1024)} MiB")
        encoding = get_encoding(parser_context or {})
        try:
            # As DRF's strict JSON: NaN and Infinity are refused.
            data = json.loads(raw.decode(encoding), parse_constant=_refuse_constant)
        except RecursionError:
            raise ParseError(f"JSON parse error - nested more than {MAX_DEPTH} levels deep") from None
        except (ValueError, LookupError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        check_document(data)
        return data


def _refuse_constant(value: str) -> None:
    raise ValueError(f"{value} is not valid JSON")


class FleetNodeInputSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="Node name; a node that does not exist is created in `pool`.")
    smiQ = serializers.CharField(required=False, allow_null=True, help_text="`nvidia-smi -q -x` output.")
    smiL = serializers.CharField(required=False, allow_null=True, help_text="`nvidia-smi -L` output.")
    topo = serializers.CharField(required=False, allow_null=True, help_text="`nvidia-smi topo -m` output.")


class FleetImportInputSerializer(serializers.Serializer):
    pool = serializers.CharField(required=False, allow_null=True, help_text="Pool slug for new nodes.")
    dryRun = serializers.BooleanField(required=False, default=False)
    replaceDevices = serializers.BooleanField(required=False, default=False)
    keepNuma = serializers.BooleanField(required=False, default=False)
    nodes = FleetNodeInputSerializer(many=True, help_text=f"1 to {MAX_NODES} nodes.")


class FleetDiffPartSerializer(serializers.Serializer):
    added = serializers.ListField(child=serializers.CharField())
    changed = serializers.ListField(child=serializers.CharField())
    removed = serializers.ListField(child=serializers.CharField())


class FleetDiffSerializer(serializers.Serializer):
    node = serializers.ChoiceField(choices=["added", "exists"])
    pool = serializers.CharField()
    devices = FleetDiffPartSerializer()
    links = FleetDiffPartSerializer()


class FleetNodeResultSerializer(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=["imported", "would import", "unchanged", "failed"])
    diff = FleetDiffSerializer(required=False)
    code = serializers.CharField(required=False)
    message = serializers.CharField(required=False)


class FleetImportResultSerializer(serializers.Serializer):
    dryRun = serializers.BooleanField()
    imported = serializers.IntegerField()
    failed = serializers.IntegerField()
    summary = serializers.CharField()
    nodes = FleetNodeResultSerializer(many=True)


def _invalid(message: str) -> InventoryError:
    return InventoryError("INVALID_INPUT", message)


def _flag(data: dict[str, Any], name: str) -> bool:
    value = data.get(name, False)
    if not isinstance(value, bool):
        raise _invalid(f"{name} must be true or false")
    return value


def read_request(data: Any) -> tuple[list[NodeFiles], FleetOptions]:
    """Return the nodes and options of a fleet import body; refuse a malformed one whole."""
    if not isinstance(data, dict):
        raise _invalid("the request must be a JSON object")
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise _invalid(f"unknown field {unknown[0]!r} (expected {', '.join(sorted(_FIELDS))})")
    pool = data.get("pool")
    if pool is not None and (not isinstance(pool, str) or not pool):
        raise _invalid("pool must be a pool slug or null")
    options = FleetOptions(
        pool=pool,
        dry_run=_flag(data, "dryRun"),
        replace_devices=_flag(data, "replaceDevices"),
        keep_numa=_flag(data, "keepNuma"),
    )
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, list) or not 1 <= len(raw_nodes) <= MAX_NODES:
        raise _invalid(f"nodes must be a list of 1 to {MAX_NODES} nodes")
    nodes: list[NodeFiles] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_nodes):
        where = f"nodes[{i}]"
        if not isinstance(raw, dict):
            raise _invalid(f"{where} must be an object")
        extra = sorted(set(raw) - {"name", *_FILES})
        if extra:
            raise _invalid(f"{where}.{extra[0]}: unknown field (expected name, smiQ, smiL, topo)")
        name = raw.get("name")
        if not isinstance(name, str):
            raise _invalid(f"{where}.name must be a string")
        problem = valid_node_name(name)
        if problem:
            raise _invalid(f"{where}.name: {problem}")
        if name in seen:
            raise _invalid(f"{where}.name: {name} is listed twice")
        seen.add(name)
        node = NodeFiles(name=name, labels={kind: f"{name}.{key}" for key, kind in _FILES.items()})
        for key, kind in _FILES.items():
            value = raw.get(key)
            if value is not None and not isinstance(value, str):
                raise _invalid(f"{where}.{key} must be the text nvidia-smi printed, or null")
            setattr(node, kind, value)
        nodes.append(node)
    return nodes, options


class FleetImportView(BerthAPIView):
    """Import many nodes' nvidia-smi outputs at once."""

    permission_classes = [IsAuthenticated, IsOperator]
    parser_classes = [FleetJSONParser]

    @extend_schema(
        operation_id="fleet_import",
        tags=["nodes"],
        summary="Import a fleet: per node `nvidia-smi -q -x`, `-L` and `topo -m`",
        description=(
            "Creates nodes (in `pool`) and devices that do not exist yet, updates the others, each node in "
            "its own transaction; `dryRun` answers the diff and stores nothing. A node whose files are bad "
            "fails alone (`status: failed`, with `code` and `message` naming field, line and cell). "
            f"At most {MAX_NODES} nodes and {MAX_BODY_BYTES // (1024 * 1024)} MiB. Operators only."
        ),
        request=FleetImportInputSerializer,
        responses={200: FleetImportResultSerializer, **errors(400, 401, 403, 404, 413)},
    )
    def post(self, request):
        nodes, options = read_request(request.data)
        try:
            result = import_fleet(nodes, options)
        except FleetInputError as exc:
            raise InventoryError(exc.code, exc.message) from exc
        failed = len(result.failed)
        return Response(
            {
                "dryRun": result.dry_run,
                "imported": len(result.nodes) - failed,
                "failed": failed,
                "summary": result.summary(),
                "nodes": [n.as_dict() for n in result.nodes],
            }
        )
