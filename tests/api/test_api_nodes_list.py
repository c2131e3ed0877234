"""Nodes over HTTP: the list with its filters, the detail, and which nodes each caller sees."""

import json

import pytest

from inventory.models import Device, NodeCondition, NodeLabel, NodeTaint


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
