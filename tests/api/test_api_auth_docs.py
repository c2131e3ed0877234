"""Authentication (token, session), the OpenAPI schema, and the Swagger UI served from vendored files."""

import json

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.templatetags.static import static

ENDPOINTS = [
    ("get", "/api/v1/reservations"),
    ("post", "/api/v1/reservations"),
    ("get", "/api/v1/reservations/1"),
    ("post", "/api/v1/reservations/1/release"),
    ("post", "/api/v1/capacity/preview"),
    ("get", "/api/v1/pools"),
    ("get", "/api/v1/pools/lab-pool"),
    ("get", "/api/v1/tenants/acme/quota"),
    ("get", "/api/v1/nodes"),
    ("get", "/api/v1/nodes/node-a"),
]


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
def test_an_anonymous_caller_is_unauthenticated(anonymous, db, method, path):
    response = getattr(anonymous, method)(path, {}, format="json")
    assert response.status_code == 401
    assert response.json() == {
        "code": "UNAUTHENTICATED",
        "message": "Authentication credentials were not provided.",
    }
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("header", ["Token nope", "Token a b", "Token", "Token \u00e9", "Token a\x00b"])
def test_a_bad_token_is_unauthenticated(client_for, db, header):
    client = client_for()
    client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/api/v1/reservations")
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHENTICATED"


def test_a_session_reads_the_api(client_for, acme, lab, ask):
    client = client_for()
    client.force_login(acme)
    assert len(client.get("/api/v1/pools").json()["results"]) == 1


def test_a_session_must_send_the_csrf_token_to_change_anything(acme, lab, ask):
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    client.force_login(acme)
    response = client.post("/api/v1/reservations", ask(1), format="json")
    assert response.status_code == 403
    assert response.json()["code"] == "FORBIDDEN"
    assert response.json()["message"].startswith("CSRF Failed")


def test_the_schema_is_served_as_yaml_and_json(anonymous, db):
    response = anonymous.get("/api/schema/")
    assert response.status_code == 200
    assert response.content.startswith(b"openapi: 3.0.3")
    schema = json.loads(anonymous.get("/api/schema/?format=json").content)
    assert set(schema["paths"]) == {
        "/api/v1/reservations",
        "/api/v1/reservations/{reservation_id}",
        "/api/v1/reservations/{reservation_id}/release",
        "/api/v1/reservations/{reservation_id}/reclaim",
        "/api/v1/series/{series_id}",
        "/api/v1/series/{series_id}/release",
        "/api/v1/reservations/{reservation_id}/approve",
        "/api/v1/reservations/{reservation_id}/deny",
        "/api/v1/capacity/preview",
        "/api/v1/capacity/earliest",
        "/api/v1/tenants/{slug}/quota",
        "/api/v1/pools",
        "/api/v1/pools/{slug}",
        "/api/v1/pools/{pool}/policy",
        "/api/v1/pools/{pool}/shares",
        "/api/v1/pools/{pool}/shares/{tenant}",
        "/api/v1/pools/{pool}/slurm",
        "/api/v1/pools/{pool}/slurm/accounts/{tenant}",
        "/api/v1/maintenance",
        "/api/v1/maintenance/{window_id}",
        "/api/v1/nodes",
        "/api/v1/nodes/{name}",
        "/api/v1/nodes/{name}/cordon",
        "/api/v1/nodes/{name}/uncordon",
        "/api/v1/nodes/{name}/drain",
        "/api/v1/nodes/{name}/history",
        "/api/v1/nodes/{name}/maintenance",
        "/api/v1/nodes/{name}/taints",
        "/api/v1/nodes/{name}/taints/{key}",
        "/api/v1/nodes/{name}/dedicate",
        "/api/v1/nodes/{name}/labels",
        "/api/v1/nodes/{name}/labels/{key}",
        "/api/v1/nodes/{name}/report",
        "/api/v1/nodes/{name}/devices/accept",
        "/api/v1/nodes/{name}/topology",
        "/api/v1/nodes/{name}/assignments",
        "/api/v1/nodes/{name}/token",
        "/api/v1/fleet/import",
        "/api/v1/token/revoke",
        "/api/v1/webhooks",
        "/api/v1/webhooks/{webhook_id}",
        "/api/v1/webhooks/{webhook_id}/rotate-secret",
        "/api/v1/webhooks/{webhook_id}/enable",
        "/api/v1/webhooks/{webhook_id}/test",
        "/api/v1/webhooks/{webhook_id}/deliveries",
        "/api/v1/calendar",
        "/api/v1/usage",
        "/api/v1/usage.csv",
        "/api/v1/audit",
        "/api/v1/audit.csv",
    }
    create = schema["paths"]["/api/v1/reservations"]["post"]
    assert create["operationId"] == "reservations_create"
    assert (
        "EightNVLinkedH100sForThreeDays" in create["requestBody"]["content"]["application/json"]["examples"]
    )
    assert set(create["responses"]) == {"200", "201", "400", "401", "403", "404", "409", "422", "429"}
    preview = schema["paths"]["/api/v1/capacity/preview"]["post"]
    assert {"Fits", "DoesNotFit"} <= set(
        preview["responses"]["200"]["content"]["application/json"]["examples"]
    )


def test_the_schema_validates_without_warnings(tmp_path):
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    assert (tmp_path / "schema.yaml").read_text().startswith("openapi: 3.0.3")


def test_the_docs_page_loads_swagger_ui_from_vendored_static_files(anonymous, db):
    response = anonymous.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    for name in (
        "swagger-ui.css",
        "swagger-ui-bundle.js",
        "swagger-ui-standalone-preset.js",
        "favicon-32x32.png",
    ):
        path = f"vendor/swagger-ui-dist@5.35.0/{name}"
        # static() writes the @ as %40; the static file server decodes it again.
        assert static(path) == f"/static/vendor/swagger-ui-dist%405.35.0/{name}"
        assert static(path) in html
        assert finders.find(path), f"{name} is not vendored"
    assert "cdn.jsdelivr.net" not in html
    assert "/api/schema/" in html


def test_the_api_root_points_at_its_docs_and_schema(client):
    response = client.get("/api/v1/")
    assert response.status_code == 200
    data = response.json()
    assert (data["docs"], data["schema"]) == ("http://testserver/api/docs/", "http://testserver/api/schema/")
    assert client.get(data["docs"]).status_code == 200
