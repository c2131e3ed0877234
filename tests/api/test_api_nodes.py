"""Nodes over HTTP: list with filters, detail, operator actions, ingestion, and who may do what."""

import json

import pytest

from inventory.models import Device, DeviceLink, NodeCondition, NodeLabel, NodeTaint

TOPO = (
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tNV18\t0-55\t0\n"
    "GPU1\tNV18\t X \t0-55\t0\n"
    "\nLegend:\n\n  X    = Self\n"
)


def names(response):
    assert response.status_code == 200, response.json()
    return [n["name"] for n in response.json()["results"]]


def test_the_node_list_summarises_each_node(as_operator, lab, as_acme, ask):
    as_acme.post("/api/v1/reservations", ask(1), format="json")
    data = as_operator.get("/api/v1/nodes").json()
    assert (len(data["results"]), data["next"], data["previous"]) == (2, None, None)
    assert data["results"][0] == {
        "name": "node-a",
        "pool": "lab-pool",
        "site": "lab",
        "state": "schedulable",
        "states": ["schedulable"],
        "role": "host",
        "provisionState": "active",
        "connectivity": "connected",
        "trust": "operator",
        "cordoned": False,
        "maintenance": False,
        "converged": True,
        "ownerTenant": None,
        "noScheduleReasons": [],
        "labels": [{"key": "bc.dev/cap.devices.limits", "value": "true", "source": "system"}],
        "taints": [],
        "deviceCounts": {"gpu": 4},
        "freeGpusNow": 3,
    }


def test_the_node_list_filters_by_state_label_free_gpus_name_and_pool(
    as_operator, lab, as_acme, ask, globex_node
):
    nodes_ = as_operator
    assert names(nodes_.get("/api/v1/nodes")) == ["globex-node", "node-a", "node-b"]
    as_acme.post("/api/v1/reservations", ask(3), format="json")
    nodes_.post("/api/v1/nodes/node-b/cordon")
    nodes_.post("/api/v1/nodes/node-a/labels", {"key": "rack", "value": "a01"}, format="json")
    assert names(nodes_.get("/api/v1/nodes?state=cordoned")) == ["node-b"]
    assert names(nodes_.get("/api/v1/nodes?state=schedulable")) == ["globex-node", "node-a"]
    assert names(nodes_.get("/api/v1/nodes?label=rack=a01")) == ["node-a"]
    assert names(nodes_.get("/api/v1/nodes?label=rack")) == ["node-a"]
    # node-b's four GPUs are free, but it is cordoned: none can be booked now.
    assert names(nodes_.get("/api/v1/nodes?free_gpus=2")) == ["globex-node"]
    assert names(nodes_.get("/api/v1/nodes?q=NODE")) == ["globex-node", "node-a", "node-b"]
    assert names(nodes_.get("/api/v1/nodes?pool=globex-pool")) == ["globex-node"]
    assert names(nodes_.get("/api/v1/nodes?pool=nowhere")) == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("state=asleep", "state must be one of excluded, maintenance, cordoned, provisioning, unreachable, "
         "NotReady, stale, unhealthy, tainted, dedicated, schedulable"),
        ("free_gpus=two", "free_gpus must be a whole number"),
    ],
)  # fmt: skip
def test_a_bad_node_filter_is_invalid_input(as_operator, lab, query, message):
    response = as_operator.get(f"/api/v1/nodes?{query}")
    assert (response.status_code, response.json()) == (400, {"code": "INVALID_INPUT", "message": message})


def _make_ready_false(name):
    from inventory.models import Node

    NodeCondition.objects.create(node=Node.objects.get(name=name), type="Ready", status="False")


def _update(name, **fields):
    from inventory.models import Node

    Node.objects.filter(name=name).update(**fields)


# Each way a node takes no new work, the state the API calls it, and how to get there.
NOT_BOOKABLE = [
    ("cordoned", lambda: inventory_services().cordon("node-b")),
    ("maintenance", lambda: inventory_services().set_maintenance("node-b", True)),
    ("unreachable", lambda: _update("node-b", connectivity="disconnected")),
    ("provisioning", lambda: _update("node-b", provision_state="provisioning")),
    ("provisioning", lambda: _update("node-b", converged=False)),
    ("NotReady", lambda: _make_ready_false("node-b")),
    ("tainted", lambda: inventory_services().add_taint("node-b", "gpu-burn", "1")),
]


def inventory_services():
    from inventory import services

    return services


@pytest.mark.parametrize(
    ("state", "change"), NOT_BOOKABLE, ids=[f"{s}-{i}" for i, (s, _) in enumerate(NOT_BOOKABLE)]
)
def test_free_gpus_now_counts_only_gpus_that_could_be_booked_now(as_operator, lab, state, change):
    """node-b's four GPUs are healthy and unbooked; once it takes no new work none is free now."""
    change()
    from capacity.rollups import refresh_rollups
    from inventory.models import Pool

    refresh_rollups([Pool.objects.get(slug="lab-pool").pk])  # rows written around the services
    data = as_operator.get("/api/v1/nodes/node-b").json()
    assert (data["state"], data["freeGpusNow"]) == (state, 0)
    assert state in data["states"] and "schedulable" not in data["states"]
    assert names(as_operator.get("/api/v1/nodes?free_gpus=1")) == ["node-a"]
    assert names(as_operator.get(f"/api/v1/nodes?state={state}")) == ["node-b"]


def test_a_node_dedicated_to_another_tenant_is_not_schedulable_to_a_tenant(
    as_operator, as_acme, as_globex, lab
):
    as_operator.post("/api/v1/nodes/node-b/dedicate", {"tenant": "globex"}, format="json")
    seen = {
        who: client.get("/api/v1/nodes/node-b").json()
        for who, client in (("operator", as_operator), ("acme", as_acme), ("globex", as_globex))
    }
    assert {who: (d["state"], d["states"], d["freeGpusNow"]) for who, d in seen.items()} == {
        "operator": ("dedicated", ["dedicated", "schedulable"], 4),
        "acme": ("dedicated", ["dedicated"], 0),
        "globex": ("dedicated", ["dedicated", "schedulable"], 4),
    }
    # The filters see the node as the caller does.
    assert names(as_acme.get("/api/v1/nodes?state=schedulable")) == ["node-a"]
    assert names(as_acme.get("/api/v1/nodes?free_gpus=1")) == ["node-a"]
    assert names(as_globex.get("/api/v1/nodes?pool=lab-pool&state=schedulable")) == ["node-a", "node-b"]
    # acme reads that node-b is dedicated, not to whom: in the node, its taints and its reasons.
    acme_sees = seen["acme"]
    assert acme_sees["taints"] == [{"key": "dedicated", "value": "another tenant", "effect": "NoSchedule"}]
    assert acme_sees["noScheduleReasons"] == ["dedicated to another tenant"]
    assert "globex" not in json.dumps(as_acme.get("/api/v1/nodes?pool=lab-pool").json())
    assert seen["globex"]["taints"][0]["value"] == "globex"
    assert seen["operator"]["noScheduleReasons"] == ["dedicated=globex"]


def test_a_node_owned_outside_its_owners_pool_is_excluded_not_schedulable(as_operator, lab, other_tenant):
    _update("node-b", owner_tenant=other_tenant)
    from capacity.rollups import refresh_rollups
    from inventory.models import Pool

    refresh_rollups([Pool.objects.get(slug="lab-pool").pk])
    data = as_operator.get("/api/v1/nodes/node-b").json()
    assert (data["state"], data["states"], data["freeGpusNow"]) == ("excluded", ["excluded"], 0)
    assert names(as_operator.get("/api/v1/nodes?state=excluded")) == ["node-b"]


def test_a_tenant_sees_only_the_nodes_of_pools_it_may_use(as_acme, as_globex, lab, globex_node):
    assert names(as_acme.get("/api/v1/nodes")) == ["node-a", "node-b"]
    assert names(as_globex.get("/api/v1/nodes")) == ["globex-node", "node-a", "node-b"]
    assert names(as_acme.get("/api/v1/nodes?pool=globex-pool")) == []
    response = as_acme.get("/api/v1/nodes/globex-node")
    assert (response.status_code, response.json()) == (
        404,
        {"code": "NOT_FOUND", "message": "no node globex-node"},
    )
    assert as_globex.get("/api/v1/nodes/globex-node").status_code == 200


def test_the_node_detail_shows_devices_links_labels_taints_conditions_and_resources(
    as_operator, lab, make_node
):
    node = make_node("node-mig", gpus=2, vcpu=100)
    node.resources.filter(resource="vcpu").update(ratio=0.29)
    gpu = Device.objects.get(node=node, index=0)
    Device.objects.create(
        node=node, uuid="MIG-0", device_class="mig-1g.10gb", parent=gpu, index=0, numa_node=0
    )
    Device.objects.filter(uuid="GPU-node-mig-1").update(healthy=False, attributes={"gpuProduct": "A100"})
    NodeTaint.objects.create(node=node, key="gpu.flaky", value="yes")
    NodeCondition.objects.create(
        node=node, type="Ready", status="False", reason="KubeletDown", message="down"
    )
    data = as_operator.get("/api/v1/nodes/node-mig").json()
    assert data["devices"] == [
        {"uuid": "GPU-node-mig-0", "class": "gpu", "index": 0, "parent": None, "numaNode": 0,
         "attributes": {}, "healthy": True, "bookable": True, "verified": True},
        {"uuid": "MIG-0", "class": "mig-1g.10gb", "index": 0, "parent": "GPU-node-mig-0", "numaNode": 0,
         "attributes": {}, "healthy": True, "bookable": True, "verified": True},
        {"uuid": "GPU-node-mig-1", "class": "gpu", "index": 1, "parent": None, "numaNode": 0,
         "attributes": {"gpuProduct": "A100"}, "healthy": False, "bookable": True, "verified": True},
    ]  # fmt: skip
    assert data["deviceCounts"] == {"gpu": 2, "mig-1g.10gb": 1}
    assert data["links"] == [{"a": "GPU-node-mig-0", "b": "GPU-node-mig-1", "rank": "NV", "nvlinks": 0}]
    assert data["taints"] == [{"key": "gpu.flaky", "value": "yes", "effect": "NoSchedule"}]
    [condition] = data["conditions"]
    assert {k: condition[k] for k in ("type", "status", "reason", "message")} == {
        "type": "Ready",
        "status": "False",
        "reason": "KubeletDown",
        "message": "down",
    }
    # 100 × 0.29 is 29 whole vCPUs, not 28.
    assert data["resources"] == [
        {"resource": "vcpu", "allocatable": 100.0, "ratio": 0.29, "allocated": 0, "capacity": 29}
    ]
    # Ready False reads NotReady, as the NoSchedule reason and the pages say it.
    assert (data["state"], data["states"]) == ("NotReady", ["NotReady", "tainted"])
    assert data["freeGpusNow"] == 0
    assert sorted(data["noScheduleReasons"]) == sorted(
        NodeTaint.objects.get(node=node).node.no_schedule_reasons
    )
    assert data["noScheduleReasons"]


def test_an_unknown_node_is_not_found(as_operator, lab):
    response = as_operator.get("/api/v1/nodes/nowhere")
    assert (response.status_code, response.json()) == (
        404,
        {"code": "NOT_FOUND", "message": "no node nowhere"},
    )


def test_listing_nodes_runs_the_same_queries_for_many_as_for_two(
    as_operator, lab, make_node, django_assert_max_num_queries
):
    as_operator.get("/api/v1/nodes")
    with django_assert_max_num_queries(10) as two:
        as_operator.get("/api/v1/nodes")
    queries_for_two = len(two)
    for i in range(10):
        node = make_node(f"more-{i:02d}", gpus=8)
        NodeLabel.objects.create(node=node, key="rack", value=f"r{i}")
        NodeTaint.objects.create(node=node, key="gpu.flaky", value="yes")
    with django_assert_max_num_queries(queries_for_two):
        data = as_operator.get("/api/v1/nodes").json()
    assert len(data["results"]) == 12


def test_a_node_detail_takes_a_fixed_number_of_queries(as_operator, lab, django_assert_max_num_queries):
    as_operator.get("/api/v1/nodes/node-a")
    with django_assert_max_num_queries(12):
        as_operator.get("/api/v1/nodes/node-a")


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


def test_a_node_report_writes_devices_and_system_labels(as_operator, lab):
    report = {
        "devices": [
            {"uuid": "GPU-node-a-0", "index": 0, "attributes": {"gpuProduct": "H100-SXM5-80GB"}},
            {"uuid": "GPU-node-a-1", "index": 1, "healthy": False},
            {"uuid": "GPU-new", "index": 4, "numaNode": 1},
        ],
        "labels": {"bc.dev/driver.nvidia": "550.54.15"},
    }
    response = as_operator.post("/api/v1/nodes/node-a/report", report, format="json")
    assert response.status_code == 200
    assert response.json() == {
        "devices": 3,
        "created": 1,
        "markedUnhealthy": 3,
        "becameHealthy": 0,
        "labelsSet": 1,
        "labelsRemoved": 1,
        "links": None,
        "images": None,
        "samples": 0,
        "unverified": 0,
    }
    node = as_operator.get("/api/v1/nodes/node-a").json()
    assert {d["uuid"]: d["healthy"] for d in node["devices"]} == {
        "GPU-node-a-0": True,
        "GPU-node-a-1": False,
        "GPU-node-a-2": False,
        "GPU-node-a-3": False,
        "GPU-new": True,
    }
    assert node["labels"] == [{"key": "bc.dev/driver.nvidia", "value": "550.54.15", "source": "system"}]


@pytest.mark.parametrize(
    ("report", "message"),
    [
        ([], "report: must be a JSON object"),
        (
            {"gpus": []},
            "report: unknown field 'gpus' (expected devices, nvidiaSmi, labels, topology, images, replace, processOwners)",
        ),
        (
            {"devices": [{"uuid": ""}]},
            "devices[0].uuid: must be at most 100 letters, digits and . _ : / + - (no spaces or line breaks)",
        ),
        ({"devices": [{"uuid": "x", "index": -1}]}, "devices[0].index: must be a non-negative integer"),
        ({"labels": {"1x": "y"}}, "labels['1x']: Label keys start with a letter"),
        ({"topology": "nonsense"}, "topology: "),
    ],
)
def test_a_malformed_report_is_invalid_input_and_changes_nothing(as_operator, lab, report, message):
    response = as_operator.post("/api/v1/nodes/node-a/report", report, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"
    assert response.json()["message"].startswith(message)
    assert Device.objects.filter(node__name="node-a", healthy=True).count() == 4


def test_reporting_another_nodes_device_is_a_conflict(as_operator, lab):
    response = as_operator.post(
        "/api/v1/nodes/node-a/report", {"devices": [{"uuid": "GPU-node-b-0"}]}, format="json"
    )
    assert (response.status_code, response.json()) == (
        409,
        {"code": "CONFLICT", "message": "devices: GPU-node-b-0 belongs to node node-b, not node-a"},
    )


@pytest.mark.parametrize("as_text", [True, False])
def test_topology_is_imported_from_text_or_json(as_operator, make_node, as_text):
    make_node("node-t", gpus=2, links=None)
    if as_text:
        response = as_operator.post("/api/v1/nodes/node-t/topology", TOPO, content_type="text/plain")
    else:
        response = as_operator.post("/api/v1/nodes/node-t/topology", {"text": TOPO}, format="json")
    assert (response.status_code, response.json()) == (200, {"links": 1})
    assert list(DeviceLink.objects.values_list("rank", "nvlinks")) == [("NV", 18)]


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        ("GPU0 nonsense", "text/plain", "topology: "),
        ({"text": 7}, None, "text must be a string"),
        ({}, None, "text is required"),
        (["x"], None, "send the matrix as text/plain"),
        (b"\xff\xfe", "text/plain", "the body is not utf-8 text"),
        ("a\x00b", "text/plain", "body: text must not contain NUL characters"),
    ],
)
def test_a_bad_topology_is_invalid_input(as_operator, make_node, body, content_type, message):
    make_node("node-t", gpus=2, links=None)
    if content_type:
        response = as_operator.post("/api/v1/nodes/node-t/topology", body, content_type=content_type)
    else:
        response = as_operator.post("/api/v1/nodes/node-t/topology", body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "INVALID_INPUT"
    assert response.json()["message"].startswith(message)


def test_a_topology_naming_a_gpu_the_node_lacks_is_invalid_input(as_operator, make_node):
    make_node("node-t", gpus=1, links=None)
    response = as_operator.post("/api/v1/nodes/node-t/topology", TOPO, content_type="text/plain")
    assert response.json() == {
        "code": "INVALID_INPUT",
        "message": "topology: GPU1: node node-t has no gpu device at index 1",
    }


def test_a_gpu_reported_unhealthy_moves_the_booking_on_it_and_the_tenant_reads_why(
    as_operator, as_acme, lab, ask, django_capture_on_commit_callbacks
):
    """acme books 2 GPUs for the day after tomorrow; a report says one of them is unhealthy."""
    from datetime import UTC, datetime, timedelta

    start = datetime.now(UTC).replace(microsecond=0) + timedelta(days=2)
    body = {**ask(2), "during": {"start": start.isoformat(), "end": (start + timedelta(days=1)).isoformat()}}
    del body["duration"]
    booked = as_acme.post("/api/v1/reservations", body, format="json").json()
    [allocation] = booked["allocations"]
    node, broken = allocation["nodeId"], allocation["atoms"][1]
    devices = [
        {"uuid": f"GPU-{node}-{i}", "index": i, "healthy": f"GPU-{node}-{i}" != broken} for i in range(4)
    ]
    with django_capture_on_commit_callbacks(execute=True):
        response = as_operator.post(f"/api/v1/nodes/{node}/report", {"devices": devices}, format="json")
    assert response.status_code == 200
    after = as_acme.get(f"/api/v1/reservations/{booked['id']}").json()
    assert after["status"] == "placed"
    live = [a for a in after["allocations"] if a["releasedAt"] is None]
    assert len(live) == 1 and broken not in live[0]["atoms"] and len(live[0]["atoms"]) == 2
    [condition] = after["conditions"]
    assert condition["type"] == "Repaired"
    assert condition["message"].endswith(f"{broken} unhealthy")


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


# --- reasons and history ---------------------------------------------------------------------


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
