"""Nodes over HTTP: an operator cordons, drains, tags and dedicates a node; nobody else may."""

import pytest
from test_api_nodes_reports import TOPO

from inventory.models import NodeLabel, NodeTaint


def test_cordon_and_uncordon_answer_the_node_as_it_is_afterwards(as_operator, lab):
    response = as_operator.post("/api/v1/nodes/node-a/cordon")
    assert response.status_code == 200
    assert (response.json()["cordoned"], response.json()["state"]) == (True, "cordoned")
    response = as_operator.post("/api/v1/nodes/node-a/uncordon")
    assert (response.json()["cordoned"], response.json()["state"]) == (False, "schedulable")


def test_uncordoning_places_a_pending_reservation(
    as_operator, as_acme, lab, ask, django_capture_on_commit_callbacks
):
    as_operator.post("/api/v1/nodes/node-a/cordon")
    as_operator.post("/api/v1/nodes/node-b/cordon")
    pending = as_acme.post("/api/v1/reservations", ask(1), format="json").json()
    assert pending["status"] == "pending"
    with django_capture_on_commit_callbacks(execute=True):
        as_operator.post("/api/v1/nodes/node-a/uncordon")
    assert as_acme.get(f"/api/v1/reservations/{pending['id']}").json()["status"] == "placed"


def test_maintenance_goes_on_and_off(as_operator, lab):
    assert as_operator.post("/api/v1/nodes/node-a/maintenance", {"on": True}, format="json").json()[
        "state"
    ] == ("maintenance")
    assert (
        as_operator.post("/api/v1/nodes/node-a/maintenance", {"on": False}, format="json").json()[
            "maintenance"
        ]
        is False
    )


@pytest.mark.parametrize("body", [{}, {"on": "yes"}, {"on": 1}, [True]])
def test_maintenance_needs_a_boolean(as_operator, lab, body):
    response = as_operator.post("/api/v1/nodes/node-a/maintenance", body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"


def test_taints_are_added_and_removed(as_operator, lab):
    data = as_operator.post(
        "/api/v1/nodes/node-a/taints",
        {"key": "example.com/gpu-burn", "value": "1", "effect": "NoExecute"},
        format="json",
    ).json()
    assert data["taints"] == [{"key": "example.com/gpu-burn", "value": "1", "effect": "NoExecute"}]
    assert data["state"] == "tainted"
    # Keys may hold '/': the path takes the rest of the URL.
    data = as_operator.delete("/api/v1/nodes/node-a/taints/example.com/gpu-burn").json()
    assert (data["taints"], data["state"]) == ([], "schedulable")


def test_removing_a_taint_the_node_lacks_is_not_found(as_operator, lab):
    response = as_operator.delete("/api/v1/nodes/node-a/taints/nothing")
    assert (response.status_code, response.json()) == (
        404,
        {"code": "NOT_FOUND", "message": "node node-a has no taint nothing"},
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"key": "1bad"}, "key: Taint keys start with a letter"),
        (
            {"key": "ok", "effect": "Sometimes"},
            "effect must be one of NoSchedule, PreferNoSchedule, NoExecute",
        ),
        ({"value": "x"}, "key is required"),
        ({"key": 5}, "key must be a string"),
        ({"key": "ok", "value": "x" * 254}, "value must be at most 253 characters"),
    ],
)
def test_a_bad_taint_is_invalid_input(as_operator, lab, body, message):
    response = as_operator.post("/api/v1/nodes/node-a/taints", body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"
    assert response.json()["message"].startswith(message)


def test_dedicating_a_node_and_ending_it(as_operator, lab, tenant):
    data = as_operator.post("/api/v1/nodes/node-a/dedicate", {"tenant": "acme"}, format="json").json()
    assert data["taints"] == [{"key": "dedicated", "value": "acme", "effect": "NoSchedule"}]
    assert (data["state"], data["noScheduleReasons"]) == ("dedicated", ["dedicated=acme"])
    data = as_operator.post("/api/v1/nodes/node-a/dedicate", {"tenant": None}, format="json").json()
    assert (data["taints"], data["state"]) == ([], "schedulable")


def test_dedicating_to_an_unknown_tenant_is_not_found(as_operator, lab):
    response = as_operator.post("/api/v1/nodes/node-a/dedicate", {"tenant": "initech"}, format="json")
    assert (response.status_code, response.json()) == (
        404,
        {"code": "NOT_FOUND", "message": "no tenant initech"},
    )


@pytest.mark.parametrize("body", [{}, {"tenant": 3}, {"tenant": ""}])
def test_dedicating_needs_a_tenant_or_null(as_operator, lab, body):
    response = as_operator.post("/api/v1/nodes/node-a/dedicate", body, format="json")
    assert (response.status_code, response.json()["code"]) == (400, "INVALID_INPUT")


def test_labels_are_set_and_removed(as_operator, lab):
    data = as_operator.post(
        "/api/v1/nodes/node-a/labels", {"key": "rack", "value": "b02"}, format="json"
    ).json()
    assert {"key": "rack", "value": "b02", "source": "operator"} in data["labels"]
    data = as_operator.delete("/api/v1/nodes/node-a/labels/rack").json()
    assert [label["key"] for label in data["labels"]] == ["bc.dev/cap.devices.limits"]


@pytest.mark.parametrize("method", ["post", "delete"])
def test_a_system_label_key_is_refused(as_operator, lab, method):
    if method == "post":
        response = as_operator.post(
            "/api/v1/nodes/node-a/labels", {"key": "bc.dev/cap.devices.limits", "value": "x"}, format="json"
        )
    else:
        response = as_operator.delete("/api/v1/nodes/node-a/labels/bc.dev/cap.devices.limits")
    assert response.status_code == 400
    assert response.json() == {
        "code": "INVALID_INPUT",
        "message": "key: labels under bc.dev/ are written by inventory only",
    }
    assert NodeLabel.objects.get(node__name="node-a", key="bc.dev/cap.devices.limits").value == "true"


def test_removing_a_label_the_node_lacks_is_not_found(as_operator, lab):
    response = as_operator.delete("/api/v1/nodes/node-a/labels/rack")
    assert (response.status_code, response.json()) == (
        404,
        {"code": "NOT_FOUND", "message": "node node-a has no label rack"},
    )


ACTIONS = [
    ("post", "/api/v1/nodes/node-a/cordon", None),
    ("post", "/api/v1/nodes/node-a/uncordon", None),
    ("post", "/api/v1/nodes/node-a/maintenance", {"on": True}),
    ("post", "/api/v1/nodes/node-a/taints", {"key": "k", "value": "v"}),
    ("delete", "/api/v1/nodes/node-a/taints/k", None),
    ("post", "/api/v1/nodes/node-a/dedicate", {"tenant": "acme"}),
    ("post", "/api/v1/nodes/node-a/labels", {"key": "rack", "value": "x"}),
    ("delete", "/api/v1/nodes/node-a/labels/rack", None),
    ("post", "/api/v1/nodes/node-a/report", {"labels": {}}),
    ("post", "/api/v1/nodes/node-a/topology", {"text": TOPO}),
]


@pytest.mark.parametrize(("method", "path", "body"), ACTIONS)
def test_a_tenant_may_not_act_on_nodes(as_acme, lab, method, path, body):
    response = getattr(as_acme, method)(path, body, format="json")
    message = "only operators may do this"
    if path.endswith("/report"):  # an agent's endpoint: the refusal says which credential it needs
        message = (
            "only operators and node node-a's own credential may do this; a node agent needs that "
            "credential: manage.py issue_token --node node-a (or, as an operator, POST "
            "/api/v1/nodes/node-a/token)"
        )
    assert (response.status_code, response.json()) == (403, {"code": "FORBIDDEN", "message": message})
    assert not NodeTaint.objects.exists() and not NodeLabel.objects.filter(key="rack").exists()


@pytest.mark.parametrize(("method", "path", "body"), ACTIONS)
def test_an_anonymous_caller_may_not_act_on_nodes(anonymous, lab, method, path, body):
    response = getattr(anonymous, method)(path, body, format="json")
    assert response.status_code == 401
    assert response.json() == {
        "code": "UNAUTHENTICATED",
        "message": "Authentication credentials were not provided.",
    }


@pytest.mark.parametrize(("method", "path", "body"), ACTIONS)
def test_an_action_on_an_unknown_node_is_not_found(as_operator, lab, tenant, method, path, body):
    response = getattr(as_operator, method)(path.replace("node-a", "ghost"), body, format="json")
    assert (response.status_code, response.json()) == (404, {"code": "NOT_FOUND", "message": "no node ghost"})


def test_staff_users_are_operators_too(make_user, client_for, lab):
    client = client_for(make_user("root", staff=True))
    assert client.post("/api/v1/nodes/node-a/cordon").status_code == 200


def test_drain_answers_what_moved_and_what_runs_until_when(as_operator, as_acme, lab, ask):
    running = as_acme.post("/api/v1/reservations", ask(2), format="json").json()
    node = running["allocations"][0]["nodeId"]
    response = as_operator.post(f"/api/v1/nodes/{node}/drain", {"reason": "bad fan"}, format="json")
    assert response.status_code == 200
    data = response.json()
    assert (data["node"], data["state"], data["moved"], data["waiting"]) == (node, "draining", [], [])
    assert data["running"] == [{"reservationId": running["id"], "instanceId": None, "end": running["end"]}]
    assert data["until"] == running["end"]
    assert as_operator.get(f"/api/v1/nodes/{node}").json()["cordoned"] is True


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [({"reason": "x", "force": True}, 400, "INVALID_INPUT"), ({"reason": 3}, 400, "INVALID_INPUT")],
)
def test_drain_refuses_bad_input_and_tenants(as_operator, as_acme, lab, body, status, code):
    response = as_operator.post("/api/v1/nodes/node-a/drain", body, format="json")
    assert (response.status_code, response.json()["code"]) == (status, code)
    assert as_acme.post("/api/v1/nodes/node-a/drain", {}, format="json").status_code == 403
    assert as_operator.post("/api/v1/nodes/nope/drain", {}, format="json").status_code == 404
