"""Fuzz every operation of the OpenAPI schema in-process: every answer is what the schema declares.

The schema is loaded from the app itself (WSGI, no network). Each operation gets the schema's own
examples, schemathesis' coverage cases and a few generated ones (derandomized: the same every run),
sent as an operator, as tenant acme and as node ams1-dgx-01's own credential; the invalid coverage
cases (and unexpected methods) are sent as an operator. Each answer must be no server error, of a
declared status and content type, with the declared headers, and its body must validate against
the declared schema, errors included. The pool matches the schema's examples (tenant acme, pool
h100-prod, nodes ams1-dgx-01 and -02), so the examples exercise real placements.
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
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

EXAMPLES = 3
SCHEMA = "/api/schema/?format=json"

# Every role: the schema's examples, the coverage phase's valid cases, a few generated ones of each
# mode (derandomized, so a run is the same run every time).
schema = schemathesis.openapi.from_wsgi(SCHEMA, get_wsgi_application())
schema.config.generation.update(max_examples=EXAMPLES, deterministic=True)
schema.config.phases.coverage.generation.update(modes=["positive"])
schema.config.phases.coverage.unexpected_methods = set()

# An operator alone: the coverage phase's invalid cases (wrong types, missing and extra fields,
# values past each bound) and unexpected methods. These answer errors, which must conform too.
bad_input = schemathesis.openapi.from_wsgi(SCHEMA, get_wsgi_application())
bad_input.config.generation.update(deterministic=True)
bad_input.config.phases.examples.enabled = False
bad_input.config.phases.fuzzing.enabled = False
bad_input.config.phases.coverage.generation.update(modes=["negative"])

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
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


@pytest.fixture
def callers(fleet, operator, acme):
    """The three kinds of caller, by their Authorization header: an operator, a tenant, a node."""
    from identity.tokens import issue_node_token

    return {
        "operator": f"Token {operator.auth_token.key}",
        "tenant": f"Token {acme.auth_token.key}",
        "node": f"Token {issue_node_token('ams1-dgx-01').key}",
    }


def send(case, role: str, authorization: str) -> None:
    """Send the case as this caller and check the answer against the schema."""
    CALLS[f"{role} {case.operation.label}"] += 1
    response = case.call_and_validate(headers={"Authorization": authorization}, checks=CHECKS)
    STATUSES[response.status_code] += 1


def for_nodes(case) -> bool:
    """Whether the operation is one a node's own credential may call (its report, its assignments)."""
    return case.operation.path.endswith(("/report", "/assignments"))


@pytest.mark.django_db
@schema.parametrize()
@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
def test_every_answer_is_what_the_schema_declares(case, in_process_requests, callers):
    """Send each request as an operator and a tenant, and as the node where it is the node's to call
    (elsewhere the node's 403 once an operation); every answer must conform."""
    send(case, "operator", callers["operator"])
    send(case, "tenant", callers["tenant"])
    if for_nodes(case) or not CALLS[f"node {case.operation.label}"]:
        send(case, "node", callers["node"])


@pytest.mark.django_db
@bad_input.parametrize()
@settings(derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
def test_bad_input_answers_a_declared_error(case, in_process_requests, callers):
    """Send the invalid cases as an operator: never a server error, and the error as declared."""
    send(case, "operator (bad input)", callers["operator"])
