"""Every error answers {"code", "message"} with the status config.errors gives it; bad input is never a 500."""

import json
import re

import pytest
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions as drf

from capacity.placement import CapacityError
from config.api.exceptions import api_exception_handler, flatten_detail
from config.errors import CODES, http_status
from inventory.errors import InventoryError
from inventory.filtersets import FilterError
from inventory.ingest import IngestError


def test_every_service_code_has_the_documented_status():
    assert {code: http_status(code) for code in sorted(CODES)} == {
        "CONFLICT": 409,
        "FORBIDDEN": 403,
        "IDEMPOTENCY_CONFLICT": 409,
        "IDEMPOTENCY_IN_FLIGHT": 409,
        "INTERNAL": 500,
        "INVALID_INPUT": 400,
        "METHOD_NOT_ALLOWED": 405,
        "NOT_ACCEPTABLE": 406,
        "NOT_FOUND": 404,
        "PAYLOAD_TOO_LARGE": 413,
        "POLICY_LIMIT": 422,
        "QUOTA_EXCEEDED": 409,
        "SERIES_NOT_PLACED": 409,
        "THROTTLED": 429,
        "UNAUTHENTICATED": 401,
        "UNSUPPORTED": 422,
        "UNSUPPORTED_MEDIA_TYPE": 415,
        "UNAVAILABLE": 503,
    }


def test_an_unknown_code_is_a_client_error():
    assert http_status("SOMETHING_NEW") == 400


@pytest.mark.parametrize(
    ("exc", "code", "status", "message"),
    [
        (CapacityError("QUOTA_EXCEEDED", "quota exceeded"), "QUOTA_EXCEEDED", 409, "quota exceeded"),
        (CapacityError("UNSUPPORTED", "not yet"), "UNSUPPORTED", 422, "not yet"),
        (InventoryError("NOT_FOUND", "no node x"), "NOT_FOUND", 404, "no node x"),
        (IngestError("devices: must be a list"), "INVALID_INPUT", 400, "devices: must be a list"),
        (IngestError("belongs to node b", code="CONFLICT"), "CONFLICT", 409, "belongs to node b"),
        (FilterError("state", "state must be one of …"), "INVALID_INPUT", 400, "state must be one of …"),
        (
            drf.ValidationError({"page": ["must be a whole number"]}),
            "INVALID_INPUT",
            400,
            "page: must be a whole number",
        ),
        (drf.ParseError("JSON parse error"), "INVALID_INPUT", 400, "JSON parse error"),
        (drf.PermissionDenied("no"), "FORBIDDEN", 403, "no"),
        (drf.NotFound("gone"), "NOT_FOUND", 404, "gone"),
        (drf.MethodNotAllowed("PUT"), "METHOD_NOT_ALLOWED", 405, 'Method "PUT" not allowed.'),
        (drf.Throttled(wait=3), "THROTTLED", 429, "Request was throttled. Expected available in 3 seconds."),
        (Http404("nothing here"), "NOT_FOUND", 404, "nothing here"),
        (DjangoPermissionDenied("nope"), "FORBIDDEN", 403, "nope"),
    ],
)
def test_the_handler_maps_each_error_to_its_code_and_status(exc, code, status, message):
    response = api_exception_handler(exc, {})
    assert (response.status_code, response.data) == (status, {"code": code, "message": message})


def test_an_unexpected_exception_is_left_to_django():
    assert api_exception_handler(RuntimeError("bug"), {}) is None


def test_nested_validation_details_read_as_one_line():
    assert flatten_detail({"a": ["x", "y"], "b": {"c": ["z"]}}) == "a: x; a: y; b.c: z"


def test_throttled_answers_carry_retry_after():
    assert api_exception_handler(drf.Throttled(wait=7), {})["Retry-After"] == "7"


def post(client, path, raw, content_type="application/json"):
    return client.generic("POST", path, raw, content_type=content_type)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "JSON parse error"),
        ("", None),  # an empty body is an empty object: the services name the missing field
        ("[1, 2]", "the request must be a JSON object"),
        ('"text"', "the request must be a JSON object"),
        ('{"tenantId": "acme\\u0000"}', "tenantId: strings must not contain NUL characters"),
        ('{"tenantId": "\\ud800"}', "tenantId: strings must be valid Unicode (no lone surrogates)"),
        ('{"poolId": 1e400}', "poolId: numbers must be finite"),
        ('{"poolId": NaN}', "JSON parse error"),
        ('{"resources": {"vcpu": 99999999999999999999}}', "resources.vcpu: integers must be between"),
        ("[" * 5000 + "]" * 5000, "nested more than 32 levels deep"),
        ('{"a": ' * 40 + "1" + "}" * 40, "nested more than 32 levels deep"),
        ("1" * 5000, "JSON parse error"),
    ],
)
def test_garbage_bodies_are_invalid_input_not_server_errors(as_acme, tenant, pool, raw, message):
    response = post(as_acme, "/api/v1/reservations", raw)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "INVALID_INPUT"
    if message:
        assert message in response.json()["message"]


def test_a_body_in_another_encoding_than_declared_is_invalid_input(as_acme, tenant, pool):
    response = post(as_acme, "/api/v1/reservations", "{}".encode("utf-16"), "application/json; charset=utf-8")
    assert (response.status_code, response.json()["code"]) == (400, "INVALID_INPUT")


def test_an_unsupported_charset_is_invalid_input(as_acme, tenant, pool):
    response = post(as_acme, "/api/v1/reservations", b"{}", "application/json; charset=bz2_codec")
    assert (response.status_code, response.json()["code"]) == (400, "INVALID_INPUT")


def test_a_form_post_is_an_unsupported_media_type(as_acme, tenant, pool):
    response = post(as_acme, "/api/v1/reservations", "tenantId=acme", "application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert response.json() == {
        "code": "UNSUPPORTED_MEDIA_TYPE",
        "message": 'Unsupported media type "application/x-www-form-urlencoded" in request.',
    }


def test_a_body_over_the_upload_limit_is_payload_too_large(as_acme, tenant, pool, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    response = post(as_acme, "/api/v1/reservations", json.dumps({"poolId": "x" * 200}))
    assert response.status_code == 413
    assert response.json() == {"code": "PAYLOAD_TOO_LARGE", "message": "the request body is too large"}


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("duration", "99999999999d", "duration must be at most 366d"),
        ("duration", "0" * 5000 + "1d", "duration must be at most 366d"),
        (
            "during",
            {"start": 10**15, "end": 10**15 + 1},
            "during.start must lie between 1970-01-01 and 9999-12-31 (UTC)",
        ),
        ("during", {"start": 0, "end": "9999-12-31T23:00:00-05:00"}, "during.end must lie between"),
        ("during", {"start": -1, "end": 1}, "during.start must lie between"),
        ("nodeLabels", {"bc.dev/driver.kata": "*"}, "nodeLabels is not a known field"),
        ("reservationId", "7", "reservationId is not a known field"),
        ("instanceId", "vm-1", "instanceId is not a known field"),
        ("excludeNodes", ["node-a"], "excludeNodes is not a known field"),
    ],
)
def test_values_the_services_would_crash_on_or_must_not_take_are_refused(
    as_acme, lab, ask, field, value, message
):
    body = ask(1)
    if field in ("duration", "during"):
        del body["duration"]
    body[field] = value
    response = as_acme.post("/api/v1/reservations", body, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "INVALID_INPUT"
    assert message in response.json()["message"]


def test_a_nul_in_a_query_parameter_is_invalid_input(as_acme, tenant):
    response = as_acme.get("/api/v1/reservations", {"pool": "lab\x00"})
    assert response.status_code == 400
    assert response.json() == {"code": "INVALID_INPUT", "message": "pool: must not contain NUL characters"}


def test_a_nul_in_a_path_is_invalid_input(as_operator):
    response = as_operator.get("/api/v1/nodes/node%00a")
    assert response.status_code == 400
    assert response.json() == {"code": "INVALID_INPUT", "message": "name: must not contain NUL characters"}


def test_a_huge_reservation_id_is_not_found(as_acme, tenant):
    response = as_acme.get("/api/v1/reservations/" + "9" * 30)
    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "message": "no reservation " + "9" * 30}


def test_an_unknown_api_path_answers_json_not_found(as_acme):
    response = as_acme.get("/api/v1/nowhere")
    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "message": "no API endpoint /api/v1/nowhere"}


def test_a_method_an_endpoint_lacks_is_method_not_allowed(as_acme, tenant):
    response = as_acme.delete("/api/v1/reservations")
    assert response.status_code == 405
    assert response.json() == {"code": "METHOD_NOT_ALLOWED", "message": 'Method "DELETE" not allowed.'}


@pytest.mark.parametrize("page", ["2", "0", "abc", "last"])
def test_a_page_number_is_refused_as_lists_are_paged_by_cursor(as_acme, tenant, page):
    # Quietly answering the first page to a client asking for page 2 would read as the end.
    response = as_acme.get("/api/v1/reservations", {"page": page})
    assert response.status_code == 400
    assert response.json() == {
        "code": "INVALID_INPUT",
        "message": "page: lists are paged by cursor: follow the next link",
    }


@pytest.mark.parametrize("size", ["0", "abc", "-1", "1.5"])
def test_a_page_size_that_is_not_a_whole_number_is_invalid_input(as_acme, tenant, size):
    response = as_acme.get("/api/v1/reservations", {"page_size": size})
    assert response.status_code == 400
    assert response.json() == {"code": "INVALID_INPUT", "message": "page_size: must be a whole number from 1"}


def test_an_options_request_describes_the_endpoint_without_failing(as_acme, tenant):
    response = as_acme.options("/api/v1/capacity/preview")
    assert response.status_code == 200
    assert response.json()["name"] == "Preview"


def test_the_api_docs_list_every_code_with_its_status_and_meaning():
    """docs/api.md's error table is config.errors.CODES, row for row."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    rows = re.findall(r"^\| `([A-Z_]+)` \| (\d{3}) \| (.+) \|$", text, re.M)
    assert rows == [(code, str(c.status), c.meaning) for code, c in CODES.items()]
