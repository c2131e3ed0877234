"""validate_request: the typed request it returns and every limit it enforces."""

from __future__ import annotations

from typing import Any

import pytest

from capacity.placement import (
    CapacityError,
    DeviceRequest,
    Expression,
    Gang,
    PlacementRequest,
    Window,
    validate_request,
)


def body(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "tenantId": "acme",
        "poolId": "pool-1",
        "reservationId": "res-1",
        "devices": [{"class": "gpu", "count": 2}],
        "during": {"start": 1_000, "end": 2_000},
    }
    for key, value in changes.items():
        if value is ...:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def refused(data: dict[str, Any]) -> str:
    with pytest.raises(CapacityError) as info:
        validate_request(data)
    assert info.value.code == "INVALID_INPUT"
    return info.value.message


def test_a_full_request_becomes_a_placement_request() -> None:
    got = validate_request(
        body(
            devices=[
                {
                    "class": "gpu",
                    "count": 4,
                    "selector": {"matchExpressions": [{"key": "vramGiB", "op": "Gte", "values": [80]}]},
                    "topology": "nvlink-all",
                },
                {"class": "mig-1g.10gb", "selector": "gpuProduct = A100"},
                {"count": 1, "selector": [{"key": "fabric.domain", "op": "Exists"}]},
            ],
            topology="any",
            gang={"size": 2, "topologyKey": "rack"},
            resources={"vcpu": 16, "memoryGiB": 0},
            excludeNodes=["n9"],
            nodeLabels={"bc.dev/driver.kata": "*"},
            imageId="img-1",
            priority="spot",
            projectId="proj-1",
        )
    )
    assert got == PlacementRequest(
        tenant_id="acme",
        pool_id="pool-1",
        during=Window(1_000, 2_000),
        devices=(
            DeviceRequest("gpu", 4, (Expression("vramGiB", "Gte", (80,)),), "nvlink-all"),
            DeviceRequest("mig-1g.10gb", 1, (Expression("gpuProduct", "In", ("A100",)),)),
            DeviceRequest("gpu", 1, (Expression("fabric.domain", "Exists"),)),
        ),
        topology="any",
        reservation_id="res-1",
        gang=Gang(2, "rack"),
        resources={"vcpu": 16, "memoryGiB": 0},
        exclude_nodes=frozenset({"n9"}),
        node_labels={"bc.dev/driver.kata": "*"},
        image_id="img-1",
        priority="spot",
        project_id="proj-1",
    )


def test_defaults_and_nulls() -> None:
    got = validate_request(body(topology=None, gang=None, imageId=None, devices=[{}]))
    assert got.devices == (DeviceRequest("gpu", 1),)
    assert (got.topology, got.gang, got.priority, got.image_id) == ("any", None, "regular", None)
    assert got.topology_for(got.devices[0]) == "any"


def test_in_values_become_strings_so_they_compare_as_the_matcher_does() -> None:
    got = validate_request(
        body(devices=[{"selector": [{"key": "vramGiB", "op": "In", "values": [80, 40.0, True]}]}])
    )
    assert got.devices[0].selector == (Expression("vramGiB", "In", ("80", "40", "true")),)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"reservationId": ...}, "exactly one of reservationId and instanceId is required"),
        ({"instanceId": "inst-1"}, "exactly one of reservationId and instanceId is required"),
        ({"tenantId": ""}, "tenantId must be a non-empty string"),
        ({"poolId": 7}, "poolId must be a non-empty string"),
        (
            {"devices": [], "resources": {}},
            "devices or resources: a request must claim at least one device or resource",
        ),
        (
            {"devices": ..., "resources": {"vcpu": 0}},
            "devices or resources: a request must claim at least one device or resource",
        ),
        ({"devices": "gpu"}, "devices must be a list"),
        ({"devices": [{"count": 0}]}, "devices[0].count must be a positive integer"),
        ({"devices": [{"count": 1.5}]}, "devices[0].count must be a positive integer"),
        ({"devices": [{"count": True}]}, "devices[0].count must be a positive integer"),
        (
            {"devices": [{"class": ""}]},
            "devices[0].class must start with a letter and contain only letters, digits, '.', '_', '/' and '-'",
        ),
        ({"devices": [{"class": "gpu", "sharing": "mps"}]}, "devices[0].sharing is not a known field"),
        ({"devices": [{"count": 40}, {"count": 25}]}, "devices: at most 64 devices in all, got 65"),
        ({"devices": [{"topology": "ring"}]}, 'devices[0].topology must be "any" or "nvlink-all"'),
        ({"topology": "nvlink"}, 'topology must be "any" or "nvlink-all"'),
        ({"during": ...}, "during is required"),
        (
            {"during": {"start": 5, "end": 5}},
            "during must be a non-empty window: during.end must be after during.start",
        ),
        (
            {"during": {"start": 9, "end": 5}},
            "during must be a non-empty window: during.end must be after during.start",
        ),
        ({"during": {"start": "1", "end": 5}}, "during.start must be an integer (epoch milliseconds)"),
        ({"during": {"start": 1, "end": 5.0}}, "during.end must be an integer (epoch milliseconds)"),
        ({"resources": {"vcpu": -1}}, "resources.vcpu must be a non-negative integer"),
        ({"resources": {"vcpu": 1.5}}, "resources.vcpu must be a non-negative integer"),
        ({"resources": {"vcpu": True}}, "resources.vcpu must be a non-negative integer"),
        (
            {"resources": {"9cpu": 1}},
            "resources key '9cpu' must start with a letter and contain only letters, digits, '.', '_', '/' and '-'",
        ),
        ({"resources": [1]}, "resources must be an object"),
        ({"gang": {"size": 0}}, "gang.size must be an integer from 1 to 64"),
        ({"gang": {"size": 65}}, "gang.size must be an integer from 1 to 64"),
        ({"gang": {"size": "2"}}, "gang.size must be an integer from 1 to 64"),
        (
            {"gang": {"size": 2, "topologyKey": "rack name"}},
            "gang.topologyKey must start with a letter and contain only letters, digits, '.', '_', '/' and '-'",
        ),
        ({"nodeLabels": {"rack": ""}}, "nodeLabels.rack must be a non-empty string"),
        ({"nodeLabels": {"rack": 3}}, "nodeLabels.rack must be a non-empty string"),
        (
            {"nodeLabels": {"-rack": "a"}},
            "nodeLabels key '-rack' must start with a letter and contain only letters, digits, '.', '_', '/' and '-'",
        ),
        ({"excludeNodes": "n1"}, "excludeNodes must be a list"),
        ({"excludeNodes": ["n1", ""]}, "excludeNodes[1] must be a non-empty string"),
        ({"priority": "urgent"}, 'priority must be "regular" or "spot"'),
        ({"imageId": ""}, "imageId must be a non-empty string"),
        ({"color": "blue"}, "color is not a known field"),
    ],
)
def test_malformed_requests_are_invalid_input_naming_the_field(changes: dict[str, Any], message: str) -> None:
    assert refused(body(**changes)) == message


def test_exactly_64_devices_in_all_is_allowed() -> None:
    assert sum(d.count for d in validate_request(body(devices=[{"count": 32}, {"count": 32}])).devices) == 64


def test_an_instance_request_needs_no_reservation() -> None:
    got = validate_request(body(reservationId=..., instanceId="inst-1"))
    assert (got.reservation_id, got.instance_id) == (None, "inst-1")


def test_a_resource_only_request_is_valid() -> None:
    assert validate_request(body(devices=..., resources={"vcpu": 2})).devices == ()


def test_ignored_fields_are_skipped() -> None:
    assert validate_request(body(idempotencyKey="k-1"), ignore={"idempotencyKey"}).tenant_id == "acme"
    assert refused(body(idempotencyKey="k-1")) == "idempotencyKey is not a known field"


def selector_error(selector: Any) -> str:
    return refused(body(devices=[{"selector": selector}]))


def expr(key: str = "vramGiB", op: str = "In", values: Any = ("80",)) -> dict[str, Any]:
    return {"key": key, "op": op, "values": list(values)}


def test_at_most_32_expressions_per_selector() -> None:
    assert validate_request(body(devices=[{"selector": [expr()] * 32}])).devices[0].selector
    assert selector_error([expr()] * 33) == "devices[0].selector: at most 32 expressions per selector"
    assert selector_error({"matchExpressions": [expr()] * 33}) == (
        "devices[0].selector.matchExpressions: at most 32 expressions per selector"
    )


def test_at_most_64_values_per_expression() -> None:
    assert validate_request(body(devices=[{"selector": [expr(values=[str(i) for i in range(64)])]}]))
    assert selector_error([expr(values=[str(i) for i in range(65)])]) == (
        "devices[0].selector[0].values: at most 64 values per expression"
    )


@pytest.mark.parametrize("key", ["", "9gpu", "_x", "gpu product", "gpu:product", "a" * 254])
def test_keys_must_start_with_a_letter_and_use_the_allowed_characters(key: str) -> None:
    assert selector_error([expr(key=key)]) == (
        "devices[0].selector[0].key must start with a letter and contain only letters, digits, '.', '_', '/' and '-'"
        " (at most 253 characters)"
    )


@pytest.mark.parametrize("key", ["a", "gpuProduct", "bc.dev/driver.kata", "fabric_domain-2", "a" * 253])
def test_valid_keys(key: str) -> None:
    assert validate_request(body(devices=[{"selector": [expr(key=key)]}]))


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (expr(op="Gte", values=[]), "devices[0].selector[0].values must hold exactly one number for Gte"),
        (expr(op="Gt", values=[1, 2]), "devices[0].selector[0].values must hold exactly one number for Gt"),
        (expr(op="Lt", values=["big"]), "devices[0].selector[0].values[0] must be a number for Lt"),
        (expr(op="Lte", values=[True]), "devices[0].selector[0].values[0] must be a number for Lte"),
        (expr(op="In", values=[]), "devices[0].selector[0].values must hold at least one value for In"),
        (expr(op="NotIn", values=[]), "devices[0].selector[0].values must hold at least one value for NotIn"),
        (expr(op="Exists", values=["x"]), "devices[0].selector[0].values must be empty for Exists"),
        (
            expr(op="DoesNotExist", values=["x"]),
            "devices[0].selector[0].values must be empty for DoesNotExist",
        ),
        (
            expr(op="Near"),
            "devices[0].selector[0].op must be one of In, NotIn, Exists, DoesNotExist, Gt, Gte, Lt, Lte",
        ),
        ({"key": "a", "op": "In", "values": "x"}, "devices[0].selector[0].values must be a list"),
        (
            {"key": "a", "op": "In", "values": [None]},
            "devices[0].selector[0].values[0] must be a string, a number or a boolean",
        ),
        ({"key": "a", "op": "Exists", "value": 1}, "devices[0].selector[0].value is not a known field"),
    ],
)
def test_operator_value_rules(expression: dict[str, Any], message: str) -> None:
    assert selector_error([expression]) == message


def test_numeric_operators_take_a_numeric_string_as_a_number() -> None:
    got = validate_request(body(devices=[{"selector": [expr(op="Gte", values=["80"])]}]))
    assert got.devices[0].selector == (Expression("vramGiB", "Gte", (80,)),)


def test_presence_operators_may_omit_values() -> None:
    got = validate_request(body(devices=[{"selector": [{"key": "fabric.domain", "op": "DoesNotExist"}]}]))
    assert got.devices[0].selector == (Expression("fabric.domain", "DoesNotExist"),)


def test_a_shorthand_selector_error_names_the_field() -> None:
    assert (
        selector_error("vramGiB >= lots")
        == "devices[0].selector: expected a number after '>=' at position 12"
    )


def test_a_non_object_request_is_refused() -> None:
    with pytest.raises(CapacityError, match="request must be an object"):
        validate_request([])  # type: ignore[arg-type]
