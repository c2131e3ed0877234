"""Fuzz every operation of the OpenAPI schema in-process: no input may cause a server error.

The schema is loaded from the app itself (WSGI, no network). Each operation gets at most 20
generated examples plus the schema's own examples and schemathesis' coverage cases, positive and
negative, authenticated as an operator and again as tenant acme, against a small pool that matches the schema's examples
(tenant acme, pool h100-prod, nodes ams1-dgx-01 and -02), so the examples exercise real placements.
"""

import time
from collections import Counter

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application())
schema.config.generation.update(max_examples=20)

CALLS: Counter = Counter()
STATUSES: Counter = Counter()


@pytest.fixture(scope="module", autouse=True)
def report_calls():
    """Print how many operations and requests the run made, by status, and how long it took."""
    started = time.monotonic()
    yield
    total = sum(CALLS.values())
    statuses = ", ".join(f"{code}: {n}" for code, n in sorted(STATUSES.items()))
    print(
        f"\nschemathesis: {len(CALLS)} operations, {total} requests ({statuses}), {time.monotonic() - started:.1f} s"
    )


@pytest.fixture
def in_process_requests():
    """Keep Django from closing the test transaction's connection between requests, as its test client does."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def fleet(make_node, site, tenant, other_tenant):
    """Two DGX-like hosts in h100-prod with the attributes and labels the schema's examples select on."""
    from capacity.rollups import refresh_rollups
    from inventory.models import Device, NodeLabel, Pool

    h100 = Pool.objects.create(slug="h100-prod", name="H100 production", site=site)
    for name in ("ams1-dgx-01", "ams1-dgx-02"):
        node = make_node(name, gpus=8, vcpu=224, memory=2048, pool=h100)
        Device.objects.filter(node=node).update(
            attributes={"gpuProduct": "H100-SXM5-80GB", "vramGiB": 80, "migCapable": True}
        )
        NodeLabel.objects.create(
            node=node, key="bc.dev/cap.devices.limits", value="true", source=NodeLabel.Source.SYSTEM
        )
        NodeLabel.objects.create(node=node, key="rack", value="a01")
    refresh_rollups([h100.pk])
    return h100


@pytest.mark.django_db
@schema.parametrize()
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_input_makes_the_api_fail(case, in_process_requests, fleet, operator):
    """Send generated requests as an operator; every answer must be a non-5xx."""
    CALLS[case.operation.label] += 1
    response = case.call_and_validate(
        headers={"Authorization": f"Token {operator.auth_token.key}"}, checks=[not_a_server_error]
    )
    STATUSES[response.status_code] += 1


@pytest.mark.django_db
@schema.parametrize()
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_input_makes_the_api_fail_for_a_tenant(case, in_process_requests, fleet, acme):
    """Send the same generated requests as tenant acme (scoped answers, 403s and 404s): never a 5xx."""
    CALLS[f"tenant {case.operation.label}"] += 1
    response = case.call_and_validate(
        headers={"Authorization": f"Token {acme.auth_token.key}"}, checks=[not_a_server_error]
    )
    STATUSES[response.status_code] += 1
