"""The reservation request is declared once (capacity.placement.fields): the schema, the API's parser,
the form, the reserve command and the port all say what it declares.

lab: node-a and node-b, 4 NVLinked GPUs each, in lab-pool.
"""

import json

import pytest

from capacity import port
from capacity.management.base import request_from_options
from capacity.placement import CapacityError
from capacity.placement.fields import API_FIELDS, FIELDS, MAX_WAIT_MS
from capacity.placement.validate import validate_request

API_NAMES = [f.name for f in FIELDS if f.api]
NOT_FOR_CALLERS = [f.name for f in FIELDS if not f.api]


def test_the_schema_lists_the_declared_fields_in_their_order_with_their_help(anonymous, db):
    schema = json.loads(anonymous.get("/api/schema/?format=json").content)
    properties = schema["components"]["schemas"]["ReservationInput"]["properties"]
    assert list(properties) == API_NAMES
    assert properties["wait"]["description"] == f"At most {MAX_WAIT_MS} ms."


@pytest.mark.parametrize("name", NOT_FOR_CALLERS)
def test_a_declared_field_that_is_not_the_callers_is_refused_by_the_api(as_acme, lab, ask, name):
    answer = as_acme.post("/api/v1/reservations", {**ask(1), name: "x"}, format="json")
    assert answer.status_code == 400
    assert answer.json() == {"code": "INVALID_INPUT", "message": f"{name} is not a known field"}


def test_the_command_speaks_only_declared_api_fields():
    options = {
        "tenant": "acme",
        "pool": "lab-pool",
        "gpus": 2,
        "device_class": "gpu",
        "selector": "vramGiB >= 80",
        "nvlink": True,
        "vcpu": 8,
        "duration": "1d",
        "gang": 2,
        "topology_key": "rack",
        "priority": "spot",
        "idempotency_key": "job-1",
    }
    data = request_from_options(options)
    assert set(data) <= API_FIELDS
    assert data["idempotencyKey"] == "job-1" and data["gang"] == {"size": 2, "topologyKey": "rack"}


def test_the_port_books_with_declared_fields_and_a_missing_instance_is_named(lab, tenant):
    booked = port.reserve_for_instance(
        instance_id="vm-1", tenant="acme", pool="lab-pool", devices=[{"count": 1}], duration="1h"
    )
    assert booked.status == "placed"
    with pytest.raises(CapacityError) as refused:
        port.reserve_for_instance(
            instance_id=None, tenant="acme", pool="lab-pool", devices=[{"count": 1}], duration="1h"
        )
    assert refused.value.message == "exactly one of reservationId and instanceId is required"


def test_the_core_takes_every_declared_core_field():
    request = validate_request(
        {
            "tenantId": "acme",
            "poolId": "lab-pool",
            "reservationId": "1",
            "devices": [{"count": 1}],
            "during": {"start": 0, "end": 1},
            "excludeNodes": ["node-b"],
            "nodeLabels": {"rack": "r1"},
            "projectId": "p",
            "priority": "spot",
        }
    )
    assert request.exclude_nodes == frozenset({"node-b"}) and request.project_id == "p"
