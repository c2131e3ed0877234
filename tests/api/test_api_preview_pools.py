"""The placement preview and the pools with their capacity, over HTTP, with tenant isolation."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from capacity.models import Quota, QuotaCharge, Reservation
from inventory import services as nodes
from inventory.models import Node, Pool


def test_a_preview_that_fits_lists_ranked_candidates_and_books_nothing(as_acme, lab, ask):
    as_acme.post("/api/v1/reservations", ask(1), format="json")
    response = as_acme.post("/api/v1/capacity/preview", ask(2, idempotencyKey="preview"), format="json")
    assert response.status_code == 200
    data = response.json()
    assert set(data) == {"fits", "candidates"}
    assert data["fits"] is True
    assert [c["nodeId"] for c in data["candidates"]] == ["node-a", "node-b"]
    best = data["candidates"][0]
    assert best["atoms"] == ["GPU-node-a-1", "GPU-node-a-2"]
    assert set(best["scores"]) == {"binpack", "topology", "fragmentation", "spread"}
    assert best["score"] > data["candidates"][1]["score"]
    # The idempotency key is checked, never stored; nothing else is written either.
    assert Reservation.objects.count() == 1
    assert not Reservation.objects.filter(idempotency_key="preview").exists()


def test_a_preview_that_does_not_fit_says_why(as_acme, lab, ask):
    nodes.cordon("node-b")
    response = as_acme.post("/api/v1/capacity/preview", ask(5), format="json")
    assert response.status_code == 200
    assert response.json() == {
        "fits": False,
        "candidates": [],
        "reason": "no node fits (2 nodes): 1 × fits: 4 of 5 gpu free; 1 × cordoned",
        "unsatisfiable": "the largest node in lab-pool has 4 gpu",
        # Never by its count: the largest request that does fit is offered.
        "hints": ["fits with 4 gpu on 1 node"],
    }


def test_a_preview_into_an_empty_pool_says_it_has_no_nodes(as_acme, pool, tenant, ask):
    assert as_acme.post("/api/v1/capacity/preview", ask(1), format="json").json() == {
        "fits": False,
        "candidates": [],
        "reason": "the pool has no nodes",
    }


def test_explain_lists_every_rejected_node_with_filter_and_reason(as_acme, lab, ask):
    nodes.cordon("node-b")
    data = as_acme.post("/api/v1/capacity/preview?explain=true", ask(2), format="json").json()
    assert data["fits"] is True
    assert data["rejected"] == [{"nodeId": "node-b", "filter": "eligible", "reason": "cordoned"}]


def test_an_explain_flag_that_is_not_a_boolean_is_invalid_input(as_acme, lab, ask):
    response = as_acme.post("/api/v1/capacity/preview?explain=maybe", ask(2), format="json")
    assert response.status_code == 400
    assert response.json() == {"code": "INVALID_INPUT", "message": "explain: must be true or false"}


def test_a_preview_checks_no_quota(as_acme, lab, ask, tenant):
    Quota.objects.create(tenant=tenant, resource="gpu", limit=0)
    assert as_acme.post("/api/v1/capacity/preview", ask(2), format="json").json()["fits"] is True
    assert not QuotaCharge.objects.exists()


def test_a_tenant_may_preview_only_for_itself(as_acme, lab, ask, other_tenant):
    response = as_acme.post("/api/v1/capacity/preview", ask(1, tenant="globex"), format="json")
    assert response.status_code == 403
    assert response.json() == {"code": "FORBIDDEN", "message": "you may not book for tenant globex"}


def test_a_tenant_may_not_preview_into_a_pool_it_may_not_use(as_acme, as_globex, lab, ask, globex_node):
    response = as_acme.post("/api/v1/capacity/preview", ask(1, pool="globex-pool"), format="json")
    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "message": "no pool globex-pool"}
    mine = as_globex.post(
        "/api/v1/capacity/preview", ask(1, tenant="globex", pool="globex-pool"), format="json"
    )
    assert mine.json()["candidates"][0]["nodeId"] == "globex-node"


def test_a_preview_takes_the_same_input_checks_as_create(as_acme, lab, ask):
    response = as_acme.post("/api/v1/capacity/preview", ask(1, binding="node"), format="json")
    assert (response.status_code, response.json()["code"]) == (400, "INVALID_INPUT")
    assert response.json()["message"].startswith("devices: a whole-node lease takes every device")
    response = as_acme.post("/api/v1/capacity/preview", {**ask(1), "nodeLabels": {}}, format="json")
    assert response.json() == {"code": "INVALID_INPUT", "message": "nodeLabels is not a known field"}


def test_pools_show_capacity_per_device_class(as_operator, as_acme, lab, ask):
    as_acme.post("/api/v1/reservations", ask(3), format="json")
    nodes.set_maintenance("node-b", True)
    response = as_operator.get("/api/v1/pools")
    assert response.status_code == 200
    assert response.json()["results"] == [
        {
            "id": "lab-pool",
            "name": "Lab pool",
            "site": "lab",
            "archived": False,
            "ownerTenant": None,
            "nodeCount": 2,
            "capacity": [
                {
                    "class": "gpu",
                    "total": 8,
                    "allocated": 3,
                    "bookedLater": 0,
                    "free": 1,
                    "excluded": 0,
                    "maintenance": 4,
                    "cordoned": 0,
                    "provisioning": 0,
                    "unreachable": 0,
                    "unhealthy": 0,
                }
            ],
        }
    ]


def test_free_capacity_never_goes_below_zero(as_operator, as_acme, lab, ask):
    """Book, then put both nodes in maintenance: the booked atoms count as allocated and in the bucket."""
    as_acme.post("/api/v1/reservations", ask(4), format="json")
    nodes.set_maintenance("node-a", True)
    nodes.set_maintenance("node-b", True)
    [gpu] = as_operator.get("/api/v1/pools/lab-pool").json()["capacity"]
    assert (gpu["total"], gpu["allocated"], gpu["maintenance"], gpu["free"]) == (8, 4, 8, 0)


def test_a_tenant_sees_only_the_pools_it_may_use(
    as_acme, as_globex, as_operator, lab, globex_node, site, other_tenant
):
    restricted = Pool.objects.create(slug="restricted", name="Restricted", site=site)
    restricted.tenants.add(other_tenant)
    assert [p["id"] for p in as_acme.get("/api/v1/pools").json()["results"]] == ["lab-pool"]
    assert [p["id"] for p in as_globex.get("/api/v1/pools").json()["results"]] == [
        "globex-pool",
        "lab-pool",
        "restricted",
    ]
    assert len(as_operator.get("/api/v1/pools").json()["results"]) == 3
    response = as_acme.get("/api/v1/pools/globex-pool")
    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "message": "no pool globex-pool"}
    assert as_acme.get("/api/v1/pools/restricted").status_code == 404
    private = as_globex.get("/api/v1/pools/globex-pool").json()
    assert (private["ownerTenant"], private["nodeCount"], private["capacity"][0]["total"]) == ("globex", 1, 2)


def test_an_unknown_pool_is_not_found(as_operator, pool):
    response = as_operator.get("/api/v1/pools/nowhere")
    assert (response.status_code, response.json()) == (
        404,
        {"code": "NOT_FOUND", "message": "no pool nowhere"},
    )


def test_listing_pools_runs_the_same_queries_for_many_as_for_one(
    as_operator, lab, site, make_node, django_assert_max_num_queries, settings
):
    settings.PAGE_CACHE_SECONDS = 0  # the live counts read every time (kept ones: the test below)
    as_operator.get("/api/v1/pools")
    with django_assert_max_num_queries(10) as one:
        as_operator.get("/api/v1/pools")
    queries_for_one = len(one)
    for i in range(5):
        extra = Pool.objects.create(slug=f"extra-{i}", name=f"Extra {i}", site=site)
        make_node(f"extra-node-{i}", gpus=2, pool=extra)
    with django_assert_max_num_queries(queries_for_one):
        data = as_operator.get("/api/v1/pools").json()
    assert len(data["results"]) == 6
    assert Node.objects.count() == 7


def test_listing_pools_again_reads_the_live_counts_kept_in_the_cache(as_operator, lab):
    first = as_operator.get("/api/v1/pools").json()["results"]
    with CaptureQueriesContext(connection) as again:
        assert as_operator.get("/api/v1/pools").json()["results"] == first
    assert not any("WITH live AS" in q["sql"] for q in again.captured_queries)


def test_a_regular_preview_that_fits_only_by_preempting_names_the_spot_work(as_acme, as_globex, lab, ask):
    """Both 4-GPU nodes hold globex's spot work: acme's 4 GPUs would take one spot reservation back."""
    spot = [as_globex.post("/api/v1/reservations", ask(4, tenant="globex", priority="spot"), format="json").json()
            for _ in range(2)]  # fmt: skip
    response = as_acme.post("/api/v1/capacity/preview", ask(4), format="json")
    assert response.status_code == 200
    data = response.json()
    assert (data["fits"], data["candidates"]) == (False, [])
    # globex's reservation is counted, not named, to acme; the node is named.
    assert (data["preemptible"]["reservations"], data["preemptible"]["others"]) == ([], 1)
    [node] = data["preemptible"]["nodes"]
    # A request for "1d" starts now: the spot work would end when the preview was asked.
    assert spot[1]["start"] <= data["preemptible"]["startsAt"] < spot[1]["end"]
    # Creating it does what the preview said: the spot reservation on that node reads preempted.
    created = as_acme.post("/api/v1/reservations", ask(4), format="json").json()
    assert created["status"] == "placed" and created["allocations"][0]["nodeId"] == node
    assert created["preempted"] == {"reservations": [], "others": 1}
    [victim] = [
        v
        for v in (as_globex.get(f"/api/v1/reservations/{s['id']}").json() for s in spot)
        if v["status"] == "preempted"
    ]
    assert victim["allocations"][0]["nodeId"] == node
    assert victim["conditions"][0]["message"].endswith("by regular work of another tenant")
    assert "reservationId" not in victim["conditions"][0]


def test_a_request_larger_than_any_node_never_fits_and_is_offered_the_largest_that_does(as_acme, lab, ask):
    """lab: two 4-GPU nodes. Nine GPUs never fit; four on one node do, and two nodes could take them."""
    data = as_acme.post("/api/v1/capacity/preview", ask(9), format="json").json()
    assert data["fits"] is False
    assert data["unsatisfiable"] == "the largest node in lab-pool has 4 gpu"
    assert data["hints"] == ["fits with 4 gpu on 2 nodes"]
    created = as_acme.post("/api/v1/reservations", ask(9), format="json").json()
    # The pending reservation keeps the hint with its reason (its page shows it).
    pending = {c["type"]: c for c in Reservation.objects.get(pk=created["id"]).conditions}
    assert pending["Unschedulable"]["hint"] == "fits with 4 gpu on 2 nodes"
    assert pending["Unsatisfiable"]["message"] == "the largest node in lab-pool has 4 gpu"
