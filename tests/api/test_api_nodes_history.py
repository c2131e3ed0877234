"""Nodes over HTTP: operator actions carry a reason, and the history says who did what, when and why."""

import pytest

from inventory.models import NodeLabel, NodeTaint

REASONED = [
    ("post", "/api/v1/nodes/node-a/cordon", {}),
    ("post", "/api/v1/nodes/node-a/uncordon", {}),
    ("post", "/api/v1/nodes/node-a/maintenance", {"on": True}),
    ("post", "/api/v1/nodes/node-a/taints", {"key": "k", "value": "v"}),
    ("post", "/api/v1/nodes/node-a/dedicate", {"tenant": "acme"}),
    ("post", "/api/v1/nodes/node-a/labels", {"key": "rack", "value": "x"}),
]


@pytest.mark.parametrize(("method", "path", "body"), REASONED)
def test_an_operator_action_refuses_a_field_it_does_not_take(as_operator, lab, tenant, method, path, body):
    response = getattr(as_operator, method)(path, {**body, "reson": "bad fan"}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"
    assert "unknown field 'reson'" in response.json()["message"]
    assert not NodeTaint.objects.exists() and not NodeLabel.objects.filter(key="rack").exists()


@pytest.mark.parametrize(("method", "path", "body"), REASONED)
def test_an_operator_action_refuses_a_reason_over_200_characters(
    as_operator, lab, tenant, method, path, body
):
    response = getattr(as_operator, method)(path, {**body, "reason": "x" * 201}, format="json")
    assert (response.status_code, response.json()) == (
        400,
        {"code": "INVALID_INPUT", "message": "reason must be text of at most 200 characters"},
    )
    assert not NodeTaint.objects.exists() and not NodeLabel.objects.filter(key="rack").exists()


def test_the_history_lists_who_did_what_when_and_why_newest_first(as_operator, lab, tenant):
    as_operator.post("/api/v1/nodes/node-a/cordon", {"reason": "bad fan"}, format="json")
    as_operator.post(
        "/api/v1/nodes/node-a/taints",
        {"key": "gpu-fault", "value": "true", "reason": "xid 79"},
        format="json",
    )
    as_operator.post("/api/v1/nodes/node-a/labels", {"key": "rack", "value": "r1"}, format="json")
    as_operator.post(
        "/api/v1/nodes/node-a/labels", {"key": "rack", "value": "r2", "reason": "moved"}, format="json"
    )
    as_operator.delete("/api/v1/nodes/node-a/taints/gpu-fault", {"reason": "fixed"}, format="json")
    as_operator.delete("/api/v1/nodes/node-a/labels/rack")
    as_operator.post("/api/v1/nodes/node-a/uncordon")
    data = as_operator.get("/api/v1/nodes/node-a/history").json()
    rows = [(r["actor"], r["action"], r["change"], r["reason"]) for r in data["results"]]
    assert rows == [
        ("operator", "uncordon", "uncordoned", ""),
        ("operator", "label-remove", "label rack=r2 removed", ""),
        ("operator", "taint-remove", "taint gpu-fault=true:NoSchedule removed", "fixed"),
        ("operator", "label-set", "label rack: r1 → r2", "moved"),
        ("operator", "label-set", "label rack=r1 set", ""),
        ("operator", "taint-add", "taint gpu-fault=true:NoSchedule added", "xid 79"),
        ("operator", "cordon", "cordoned", "bad fan"),
        ("system", "label-set", "system label bc.dev/cap.devices.limits=true set", ""),
        ("system", "create", "node created", ""),
    ]
    assert len(data["results"]) == 9 and data["results"][0]["at"] >= data["results"][-1]["at"]
    first = as_operator.get("/api/v1/nodes/node-a/history?page_size=3").json()
    page = as_operator.get(first["next"]).json()
    assert [r["change"] for r in page["results"]] == [
        "label rack: r1 → r2",
        "label rack=r1 set",
        "taint gpu-fault=true:NoSchedule added",
    ]


def test_the_node_detail_says_who_cordoned_drained_or_put_in_maintenance_when_and_why(
    as_operator, as_acme, lab
):
    detail = as_operator.get("/api/v1/nodes/node-a").json()
    assert detail["stateChanges"] == {"cordoned": None, "maintenance": None, "drain": None}
    as_operator.post("/api/v1/nodes/node-a/drain", {"reason": "psu swap"}, format="json")
    detail = as_operator.post(
        "/api/v1/nodes/node-a/maintenance", {"on": True, "reason": "firmware"}, format="json"
    ).json()
    changes = detail["stateChanges"]
    assert {k: changes["drain"][k] for k in ("actor", "action", "change", "reason")} == {
        "actor": "operator", "action": "drain", "change": "drain started", "reason": "psu swap",
    }  # fmt: skip
    assert changes["cordoned"] == changes["drain"]
    assert (changes["maintenance"]["reason"], changes["maintenance"]["actor"]) == ("firmware", "operator")
    # A tenant reads that the node is cordoned, not the operators' words.
    assert as_acme.get("/api/v1/nodes/node-a").json()["stateChanges"] is None


def test_a_node_report_records_only_what_changed_as_by_its_reporter(as_operator, lab):
    report = {"labels": {"bc.dev/cap.devices.limits": "true", "bc.dev/rack": "r1"}}
    for _ in range(3):
        assert as_operator.post("/api/v1/nodes/node-a/report", report, format="json").status_code == 200
    rows = as_operator.get("/api/v1/nodes/node-a/history").json()["results"]
    assert [(r["actor"], r["change"], r["reason"]) for r in rows] == [
        ("operator", "system label bc.dev/rack=r1 set", "node report"),
        ("system", "system label bc.dev/cap.devices.limits=true set", ""),
        ("system", "node created", ""),
    ]


def test_the_history_is_for_operators(as_acme, anonymous, as_operator, lab):
    assert as_acme.get("/api/v1/nodes/node-a/history").status_code == 403
    assert anonymous.get("/api/v1/nodes/node-a/history").status_code == 401
    response = as_operator.get("/api/v1/nodes/ghost/history")
    assert (response.status_code, response.json()) == (404, {"code": "NOT_FOUND", "message": "no node ghost"})
