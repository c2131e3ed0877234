"""The OpenAPI schema is a contract clients are generated from: valid for a strict 3.0.3 validator,
every operation tagged, named and with its errors, every answer typed, every list paged."""

import json
import re

import pytest
from openapi_schema_validator import OAS30Validator
from openapi_spec_validator import OpenAPIV30SpecValidator

# Free-form on purpose: a device's attributes are whatever its node reports; an audit entry's
# before and after are the changed object's fields, whatever it is.
OPEN_BY_DESIGN = {"Device.attributes", "AuditEntry.before", "AuditEntry.after"}
METHODS = ("get", "put", "post", "patch", "delete")


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    from django.test import Client

    with django_db_blocker.unblock():
        return json.loads(Client().get("/api/schema/?format=json").content)


def operations(schema):
    for path, item in schema["paths"].items():
        for method in METHODS:
            if method in item:
                yield f"{method.upper()} {path}", item[method]


def resolve(schema, node):
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def test_the_schema_is_valid_for_a_strict_validator(schema):
    assert schema["openapi"] == "3.0.3"
    errors = [error.message for error in OpenAPIV30SpecValidator(schema).iter_errors()]
    assert errors == []


def test_every_reference_names_a_component(schema):
    refs = set(re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', json.dumps(schema)))
    assert refs and refs <= set(schema["components"]["schemas"])


def test_every_operation_has_a_tag_an_operation_id_and_its_errors(schema):
    ids = []
    for label, operation in operations(schema):
        assert operation.get("tags"), label
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", operation["operationId"]), label
        assert not operation["operationId"].startswith("api_"), label
        errors = [code for code in operation["responses"] if code.startswith("4")]
        assert {"400", "401", "403"} <= set(errors), label
        for code in errors:
            content = operation["responses"][code]["content"]
            assert content == {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}, (
                label,
                code,
            )
        ids.append(operation["operationId"])
    assert len(ids) == len(set(ids)) > 50


def test_every_answer_is_typed_and_every_list_is_paged(schema):
    """No free-form object in an answer where the docs define fields; no bare array for a list."""
    seen: set[str] = set()

    def walk(node, where):
        node = node if "$ref" not in node else {"$ref": node["$ref"]}
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[1]
            if name in seen:
                return
            seen.add(name)
            node, where = resolve(schema, node), name
        if node.get("enum") == [None] or where in OPEN_BY_DESIGN:
            return
        assert node.keys() & {"type", "oneOf", "anyOf", "allOf", "enum"}, f"{where}: any JSON at all"
        if node.get("type") == "object" and "properties" not in node:
            assert isinstance(node.get("additionalProperties"), dict) and node["additionalProperties"], where
            walk(node["additionalProperties"], where)
        for key, child in node.get("properties", {}).items():
            walk(child, f"{where}.{key}")
        for key in ("oneOf", "anyOf", "allOf"):
            for child in node.get(key, []):
                walk(child, where)
        if "items" in node:
            walk(node["items"], where)

    for label, operation in operations(schema):
        for code, answer in operation["responses"].items():
            for media, content in answer.get("content", {}).items():
                if media != "application/json":
                    assert content["schema"] == {"type": "string"}, (label, media)
                    continue
                top = resolve(schema, content["schema"])
                assert top.get("type") != "array", f"{label} answers a bare list"
                walk(content["schema"], f"{label} {code}")
    assert {"Reservation", "ReservationInput", "Series", "AssignedDevice", "Delivery", "UsageRow"} <= seen


def test_every_nullable_field_takes_null_in_a_strict_validator(schema):
    checked = 0
    for name, component in schema["components"]["schemas"].items():
        for field, declared in component.get("properties", {}).items():
            nullable = declared.get("nullable") or any(
                option.get("nullable") for option in declared.get("oneOf", [])
            )
            if not nullable:
                continue
            assert "type" in declared or "oneOf" in declared, f"{name}.{field}: nullable without a type"
            wrapped = {**declared, "components": schema["components"]}
            assert list(OAS30Validator(wrapped).iter_errors(None)) == [], f"{name}.{field}"
            checked += 1
    assert checked > 20


def test_the_events_a_subscription_takes_are_the_events_table(schema):
    from webhooks.models import EVENT_TYPES

    assert schema["components"]["schemas"]["WebhookEventEnum"]["enum"] == list(EVENT_TYPES)
