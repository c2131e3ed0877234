"""Maintenance windows over the API: operators schedule and delete them, tenants read those on their nodes."""

from datetime import timedelta

import pytest
from django.utils import timezone

from capacity.models import MaintenanceWindow, MaintenanceWindowNode

WINDOWS = "/api/v1/maintenance"


def hours_ahead(hours: int) -> str:
    """Return a whole hour `hours` after the real now, as ISO 8601."""
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    return (now + timedelta(hours=hours + 1)).isoformat()


def window_body(**extra):
    return {
        "nodes": ["node-a"],
        "start": hours_ahead(10),
        "end": hours_ahead(14),
        "reason": "firmware",
        **extra,
    }


def during(ask, gpus: int, start: int, end: int) -> dict:
    """Return a create body for `gpus` GPUs over [start, end) hours ahead of the real clock."""
    body = {k: v for k, v in ask(gpus).items() if k != "duration"}
    return {**body, "during": {"start": hours_ahead(start), "end": hours_ahead(end)}}


def test_an_operator_schedules_a_window_and_gets_it_with_the_bookings_it_overlaps(
    as_operator, as_acme, lab, ask
):
    made = [as_acme.post("/api/v1/reservations", during(ask, 4, 11, 12), format="json") for _ in range(2)]
    assert [r.status_code for r in made] == [201, 201], made[0].json()
    on_a = [r.json()["id"] for r in made if r.json()["allocations"][0]["nodeId"] == "node-a"]
    response = as_operator.post(WINDOWS, window_body(), format="json")
    assert response.status_code == 201, response.json()
    data = response.json()
    assert {k: data[k] for k in ("nodes", "pool", "reason", "move", "state", "createdBy")} == {
        "nodes": ["node-a"],
        "pool": None,
        "reason": "firmware",
        "move": False,
        "state": "scheduled",
        "createdBy": "operator",
    }
    assert [(str(o["reservationId"]), o["node"], o["tenantId"]) for o in data["overlaps"]] == [
        (str(on_a[0]), "node-a", "acme")
    ]
    assert (data["moved"], data["waiting"], data["left"]) == ([], [], 0)
    again = as_operator.get(f"{WINDOWS}/{data['id']}")
    assert again.status_code == 200
    assert again.json()["nodes"] == ["node-a"] and "overlaps" not in again.json()


def test_a_tenant_may_not_schedule_or_delete_a_window_but_reads_those_on_its_nodes(as_operator, as_acme, lab):
    refused = as_acme.post(WINDOWS, window_body(), format="json")
    assert refused.status_code == 403
    assert refused.json()["code"] == "FORBIDDEN"
    assert not MaintenanceWindow.objects.exists()
    made = as_operator.post(WINDOWS, window_body(), format="json").json()
    assert as_acme.delete(f"{WINDOWS}/{made['id']}").status_code == 403
    listed = as_acme.get(WINDOWS).json()["results"]
    assert [w["id"] for w in listed] == [made["id"]]
    assert as_acme.get(f"{WINDOWS}/{made['id']}").status_code == 200


def test_a_globex_pool_window_is_not_acme_s_to_see(as_operator, as_acme, lab, globex_node):
    made = as_operator.post(WINDOWS, window_body(nodes=["globex-node"]), format="json").json()
    assert as_acme.get(WINDOWS).json()["results"] == []
    assert as_acme.get(f"{WINDOWS}/{made['id']}").status_code == 404


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"start": "2020-01-01T00:00:00Z", "end": "2020-01-01T04:00:00Z"}, "start"),
        ({"end": "START"}, "end"),
        ({"nodes": ["node-a", "no-such-node"]}, "nodes"),
        ({"pool": "lab-pool"}, "nodes"),
        ({"nodes": None}, "nodes"),
        ({"pool": "no-such-pool", "nodes": None}, "pool"),
        ({"start": "tomorrow"}, "start"),
        ({"colour": "red"}, "unknown field 'colour'"),
    ],
)
def test_bad_input_answers_400_naming_the_field_and_writes_nothing(as_operator, lab, change, field):
    body = window_body(**change)
    if body["end"] == "START":
        body["end"] = hours_ahead(9)
    body = {k: v for k, v in body.items() if v is not None}
    response = as_operator.post(WINDOWS, body, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "INVALID_INPUT"
    assert response.json()["message"].startswith(field), response.json()["message"]
    assert not MaintenanceWindow.objects.exists() and not MaintenanceWindowNode.objects.exists()


def test_windows_list_by_pool_node_and_active_and_delete(as_operator, lab):
    first = as_operator.post(WINDOWS, window_body(), format="json").json()
    second = as_operator.post(
        WINDOWS,
        window_body(nodes=None, pool="lab-pool", start=hours_ahead(20), end=hours_ahead(22)),
        format="json",
    ).json()
    assert second["nodes"] == ["node-a", "node-b"] and second["pool"] == "lab-pool"
    ids = lambda query: [w["id"] for w in as_operator.get(WINDOWS + query).json()["results"]]  # noqa: E731
    assert ids("") == [first["id"], second["id"]]
    assert ids("?node=node-b") == [second["id"]]
    assert ids("?pool=lab-pool") == [first["id"], second["id"]]
    assert ids("?active=true") == []
    assert ids("?active=false") == [first["id"], second["id"]]
    assert as_operator.get(WINDOWS + "?active=maybe").status_code == 400
    assert as_operator.delete(f"{WINDOWS}/{first['id']}").status_code == 204
    assert as_operator.get(f"{WINDOWS}/{first['id']}").status_code == 404
    assert as_operator.delete(f"{WINDOWS}/{first['id']}").json()["code"] == "NOT_FOUND"
    assert ids("") == [second["id"]]


def test_the_preview_explains_the_window(as_operator, as_acme, lab, ask):
    made = as_operator.post(WINDOWS, window_body(), format="json").json()
    response = as_acme.post("/api/v1/capacity/preview?explain=true", during(ask, 1, 11, 12), format="json")
    assert response.status_code == 200, response.json()
    rejected = response.json().get("rejected")
    assert rejected is not None, response.json()
    (row,) = [r for r in rejected if r["nodeId"] == "node-a"]
    assert row["filter"] == "maintenance-window"
    assert row["reason"].startswith(f"window {made['id']}, ")


def test_a_running_booking_reads_the_window_and_the_audit_names_who_scheduled_and_deleted(
    as_operator, as_acme, lab, ask
):
    running = as_acme.post("/api/v1/reservations", ask(2), format="json").json()  # starts now, a day
    node = running["allocations"][0]["nodeId"]
    made = as_operator.post(
        WINDOWS, window_body(nodes=[node], start=hours_ahead(2), end=hours_ahead(4)), format="json"
    )
    window = made.json()
    mine = as_acme.get(f"/api/v1/reservations/{running['id']}").json()
    assert mine["maintenance"] == {
        "windowId": window["id"],
        "start": window["start"],
        "end": window["end"],
        "reason": "firmware",
        "nodes": [node],
    }
    (condition,) = [c for c in mine["conditions"] if c["type"] == "MaintenanceScheduled"]
    assert (condition["status"], condition["reason"]) == ("True", "MaintenanceWindow")
    assert as_operator.delete(f"{WINDOWS}/{window['id']}").status_code == 204
    mine = as_acme.get(f"/api/v1/reservations/{running['id']}").json()
    assert mine["maintenance"] is None
    (condition,) = [c for c in mine["conditions"] if c["type"] == "MaintenanceScheduled"]
    assert (condition["status"], condition["reason"]) == ("False", "WindowCancelled")
    rows = as_operator.get(f"/api/v1/audit?object=maintenance:{window['id']}").json()["results"]
    assert [(r["action"], r["actor"]) for r in rows] == [
        ("maintenance.delete", "operator"),
        ("maintenance.schedule", "operator"),
    ]
    assert all(r["requestId"] for r in rows)
    assert rows[1]["after"]["nodes"] == [node] and rows[0]["before"]["reason"] == "firmware"
    assert as_acme.get(f"/api/v1/audit?object=maintenance:{window['id']}").status_code == 403
