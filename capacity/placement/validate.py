"""Turn the JSON-ish request the API and CLI take into a PlacementRequest, or refuse it.

The fields and their limits are declared in fields.py.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from .errors import INVALID_INPUT, CapacityError
from .fields import (
    DEVICE_FIELDS,
    EXPRESSION_FIELDS,
    GANG_FIELDS,
    MAX_DEVICES,
    MAX_EXCLUDED,
    MAX_GANG_SIZE,
    MAX_LABELS,
    MAX_RESOURCES,
    MAX_TEXT,
    REQUEST_FIELDS,
    WINDOW_FIELDS,
)
from .selectors import MAX_EXPRESSIONS, check_expression, is_valid_key, parse_selector
from .types import (
    PRIORITIES,
    TOPOLOGIES,
    DeviceRequest,
    Expression,
    Gang,
    PlacementRequest,
    Window,
)

KEY_RULE: Final = "must start with a letter and contain only letters, digits, '.', '_', '/' and '-'"


def _invalid(message: str) -> CapacityError:
    return CapacityError(INVALID_INPUT, message)


def _object(value: object, field: str, allowed: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _invalid(f"{field} must be an object")
    for name in value:
        if name not in allowed:
            prefix = f"{field}." if field != "request" else ""
            raise _invalid(f"{prefix}{name} is not a known field")
    return value


def _list(value: object, field: str) -> Sequence[Any]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise _invalid(f"{field} must be a list")
    return value


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: object, field: str, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, str) or not value:
        raise _invalid(f"{field} must be a non-empty string")
    if len(value) > limit:
        raise _invalid(f"{field} must be at most {limit} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise _invalid(f"{field} must not contain control characters")
    return value


def _optional_text(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    return None if value is None else _text(value, name)


def _key(value: object, field: str) -> str:
    if not is_valid_key(value):
        raise _invalid(f"{field} {KEY_RULE}")
    assert isinstance(value, str)
    return value


def _topology(value: object, field: str) -> str:
    if value not in TOPOLOGIES:
        raise _invalid(f'{field} must be "any" or "nvlink-all"')
    assert isinstance(value, str)
    return value


def _selector(value: object, field: str) -> tuple[Expression, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return parse_selector(value, field)
    if isinstance(value, Mapping):
        value = _object(value, field, frozenset({"matchExpressions"})).get("matchExpressions", ())
        field = f"{field}.matchExpressions"
    items = _list(value, field)
    if len(items) > MAX_EXPRESSIONS:
        raise _invalid(f"{field}: at most {MAX_EXPRESSIONS} expressions per selector")
    exprs: list[Expression] = []
    for i, item in enumerate(items):
        if isinstance(item, Expression):
            exprs.append(check_expression(item.key, item.op, item.values, f"{field}[{i}]"))
            continue
        expr = _object(item, f"{field}[{i}]", EXPRESSION_FIELDS)
        exprs.append(check_expression(expr.get("key"), expr.get("op"), expr.get("values"), f"{field}[{i}]"))
    return tuple(exprs)


def _device(value: object, field: str) -> DeviceRequest:
    data = _object(value, field, DEVICE_FIELDS)
    device_class = _key(data.get("class", "gpu"), f"{field}.class")
    count = data.get("count", 1)
    if not _is_int(count) or count < 1:
        raise _invalid(f"{field}.count must be a positive integer")
    topology = data.get("topology")
    return DeviceRequest(
        device_class=device_class,
        count=count,
        selector=_selector(data.get("selector"), f"{field}.selector"),
        topology=None if topology is None else _topology(topology, f"{field}.topology"),
    )


def _window(value: object) -> Window:
    if value is None:
        raise _invalid("during is required")
    data = _object(value, "during", WINDOW_FIELDS)
    for name in ("start", "end"):
        if not _is_int(data.get(name)):
            raise _invalid(f"during.{name} must be an integer (epoch milliseconds)")
    window = Window(data["start"], data["end"])
    if window.end <= window.start:
        raise _invalid("during must be a non-empty window: during.end must be after during.start")
    return window


def _gang(value: object) -> Gang | None:
    if value is None:
        return None
    data = _object(value, "gang", GANG_FIELDS)
    size = data.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= MAX_GANG_SIZE:
        raise _invalid(f"gang.size must be an integer from 1 to {MAX_GANG_SIZE}")
    key = data.get("topologyKey")
    return Gang(size, None if key is None else _key(key, "gang.topologyKey"))


def _resources(value: object) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _invalid("resources must be an object")
    if len(value) > MAX_RESOURCES:
        raise _invalid(f"resources: at most {MAX_RESOURCES} resources")
    out: dict[str, int] = {}
    for name, amount in value.items():
        _key(name, f"resources key {name!r}")
        if not _is_int(amount) or amount < 0:
            raise _invalid(f"resources.{name} must be a non-negative integer")
        out[name] = amount
    return out


def _labels(value: object) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _invalid("nodeLabels must be an object")
    if len(value) > MAX_LABELS:
        raise _invalid(f"nodeLabels: at most {MAX_LABELS} labels")
    out: dict[str, str] = {}
    for key, label in value.items():
        _key(key, f"nodeLabels key {key!r}")
        out[key] = _text(label, f"nodeLabels.{key}")
    return out


def _excluded(value: object) -> frozenset[str]:
    if value is None:
        return frozenset()
    items = _list(value, "excludeNodes")
    if len(items) > MAX_EXCLUDED:
        raise _invalid(f"excludeNodes: at most {MAX_EXCLUDED} nodes")
    return frozenset(_text(item, f"excludeNodes[{i}]") for i, item in enumerate(items))


def validate_request(data: Mapping[str, Any], *, ignore: Collection[str] = ()) -> PlacementRequest:
    """Return the PlacementRequest data describes, or raise INVALID_INPUT naming the field at fault.

    data uses the API's camelCase names; a field that is null counts as absent. Fields in ignore
    (such as an API's idempotencyKey) are skipped; any other unknown field is an error.
    """
    if not isinstance(data, Mapping):
        raise _invalid("request must be an object")
    if ignore:
        data = {k: v for k, v in data.items() if k not in ignore}
    _object(data, "request", REQUEST_FIELDS)
    tenant_id = _text(data.get("tenantId"), "tenantId")
    pool_id = _text(data.get("poolId"), "poolId")
    reservation_id = _optional_text(data, "reservationId")
    instance_id = _optional_text(data, "instanceId")
    if (reservation_id is None) == (instance_id is None):
        raise _invalid("exactly one of reservationId and instanceId is required")
    lease = data.get("lease", False)
    if lease is None:
        lease = False
    if not isinstance(lease, bool):
        raise _invalid("lease must be true or false")
    if lease:
        # A lease takes the whole node: nothing narrower may be asked for.
        for name in ("devices", "resources", "topology", "imageId"):
            if data.get(name) is not None:
                raise _invalid(
                    f"{name}: a whole-node lease takes every device and all scalar room; leave {name} out"
                )
    raw_devices = data.get("devices")
    items = () if raw_devices is None else _list(raw_devices, "devices")
    devices = tuple(_device(item, f"devices[{i}]") for i, item in enumerate(items))
    total = sum(d.count for d in devices)
    if total > MAX_DEVICES:
        raise _invalid(f"devices: at most {MAX_DEVICES} devices in all, got {total}")
    resources = _resources(data.get("resources"))
    if not lease and not devices and not any(resources.values()):
        raise _invalid("devices or resources: a request must claim at least one device or resource")
    during = _window(data.get("during"))
    priority = data.get("priority", "regular")
    if priority is None:
        priority = "regular"
    if priority not in PRIORITIES:
        raise _invalid('priority must be "regular" or "spot"')
    topology = data.get("topology")
    return PlacementRequest(
        tenant_id=tenant_id,
        pool_id=pool_id,
        during=during,
        devices=devices,
        topology="any" if topology is None else _topology(topology, "topology"),
        reservation_id=reservation_id,
        instance_id=instance_id,
        gang=_gang(data.get("gang")),
        resources=resources,
        exclude_nodes=_excluded(data.get("excludeNodes")),
        node_labels=_labels(data.get("nodeLabels")),
        image_id=_optional_text(data, "imageId"),
        priority=priority,
        project_id=_optional_text(data, "projectId"),
        lease=lease,
    )
