"""A pool's shares per tenant over the API: operators set and remove, tenants read their own row."""

from policy.models import PoolShare

SHARES = "/api/v1/pools/lab-pool/shares"


def put(client, tenant, guaranteed, borrowing=None, lending=None, pool="lab-pool"):
    body = {"guaranteedGpus": guaranteed, "borrowingLimitGpus": borrowing, "lendingLimitGpus": lending}
    return client.put(f"/api/v1/pools/{pool}/shares/{tenant}", body, format="json")


def test_an_operator_sets_changes_and_removes_a_share(as_operator, lab, tenant):
    response = put(as_operator, "acme", 3, None, 2)
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "tenantId": "acme",
        "guaranteedGpus": 3,
        "borrowingLimitGpus": None,
        "lendingLimitGpus": 2,
        "holdingGpus": 0.0,
        "borrowedGpus": 0.0,
        "fairShare": 0.0,
    }
    assert put(as_operator, "acme", 5, 1, None).json()["guaranteedGpus"] == 5
    share = PoolShare.objects.get()
    assert (share.guaranteed_gpus, share.borrowing_limit_gpus, share.lending_limit_gpus) == (5, 1, None)
    assert as_operator.delete("/api/v1/pools/lab-pool/shares/acme").status_code == 204
    assert not PoolShare.objects.exists()
    response = as_operator.delete("/api/v1/pools/lab-pool/shares/acme")
    assert (response.status_code, response.json()["code"]) == (404, "NOT_FOUND")


def test_holding_and_borrowed_count_what_the_tenant_holds_now(
    as_operator, as_acme, lab, tenant, reserve_as, acme
):
    put(as_operator, "acme", 2)
    reserve_as(acme, gpus=3)
    row = as_acme.get(SHARES).json()["results"][0]
    assert (row["holdingGpus"], row["borrowedGpus"]) == (3.0, 1.0)
    # Booked from now: a moment of three GPUs, decayed, over a guarantee of two: above 0, far below 1.
    assert 0 <= row["fairShare"] < 0.01


def test_a_tenant_reads_only_its_own_row_and_may_not_write(as_operator, as_acme, lab, tenant, other_tenant):
    put(as_operator, "acme", 2)
    put(as_operator, "globex", 4, 0, 0)
    assert [r["tenantId"] for r in as_operator.get(SHARES).json()["results"]] == ["acme", "globex"]
    rows = as_acme.get(SHARES).json()["results"]
    assert [r["tenantId"] for r in rows] == ["acme"]
    assert "globex" not in str(rows)
    for response in (put(as_acme, "acme", 8), as_acme.delete("/api/v1/pools/lab-pool/shares/globex")):
        assert (response.status_code, response.json()["code"]) == (403, "FORBIDDEN")
    assert sorted(PoolShare.objects.values_list("guaranteed_gpus", flat=True)) == [2, 4]


def test_guarantees_above_the_pools_gpus_are_refused_naming_both_figures(
    as_operator, lab, tenant, other_tenant
):
    assert put(as_operator, "acme", 5).status_code == 200
    response = put(as_operator, "globex", 4)
    assert response.status_code == 400
    assert response.json() == {
        "code": "INVALID_INPUT",
        "message": "guaranteedGpus: the guarantees of lab-pool would add up to 9 GPUs; it has 8 bookable GPUs",
    }
    # Changing acme's own row counts its new figure, not its old one as well.
    assert put(as_operator, "acme", 8).status_code == 200
    assert PoolShare.objects.count() == 1


def test_bad_figures_and_unknown_names_answer_4xx_and_write_nothing(as_operator, lab, tenant):
    cases = [
        ({"guaranteedGpus": -1}, 400, "guaranteedGpus"),
        ({"guaranteedGpus": 1.5}, 400, "guaranteedGpus"),
        ({"guaranteedGpus": "2"}, 400, "guaranteedGpus"),
        ({"guaranteedGpus": True}, 400, "guaranteedGpus"),
        ({}, 400, "guaranteedGpus"),
        ({"guaranteedGpus": 1, "borrowingLimitGpus": -2}, 400, "borrowingLimitGpus"),
        ({"guaranteedGpus": 1, "lendingLimitGpus": 0.5}, 400, "lendingLimitGpus"),
        ({"guaranteedGpus": 1, "weight": 2}, 400, "weight"),
    ]
    for body, status, field in cases:
        response = as_operator.put("/api/v1/pools/lab-pool/shares/acme", body, format="json")
        assert response.status_code == status, body
        assert response.json()["code"] == "INVALID_INPUT" and field in response.json()["message"], body
    response = put(as_operator, "nobody", 1)
    assert (response.status_code, response.json()) == (
        404,
        {"code": "NOT_FOUND", "message": "no tenant nobody"},
    )
    response = put(as_operator, "acme", 1, pool="no-pool")
    assert (response.status_code, response.json()) == (
        404,
        {"code": "NOT_FOUND", "message": "no pool no-pool"},
    )
    assert as_operator.get("/api/v1/pools/no-pool/shares").status_code == 404
    assert not PoolShare.objects.exists()


def test_a_pool_without_shares_lists_none(as_acme, lab):
    assert as_acme.get(SHARES).json() == {"next": None, "previous": None, "results": []}


def test_the_shares_are_paged_by_cursor_as_every_list(as_operator, lab, tenant, other_tenant):
    put(as_operator, "acme", 1)
    put(as_operator, "globex", 1)
    first = as_operator.get(SHARES, {"page_size": 1}).json()
    assert [r["tenantId"] for r in first["results"]] == ["acme"] and first["previous"] is None
    second = as_operator.get(first["next"]).json()
    assert [r["tenantId"] for r in second["results"]] == ["globex"] and second["next"] is None


def test_a_mig_slice_counts_as_its_share_of_a_gpu_in_the_pool_and_in_holding(
    as_operator, as_acme, make_node, pool, tenant
):
    from capacity.rollups import refresh_rollups
    from inventory.models import Device

    node = make_node("mig-node", gpus=2)
    split = Device.objects.get(node=node, index=1)
    Device.objects.bulk_create(
        Device(node=node, uuid=f"MIG-{i}", device_class="mig-3g.40gb", parent=split, index=i)
        for i in range(2)
    )
    refresh_rollups([pool.pk])
    # One whole GPU and two 3/7 slices: 1 6/7 bookable GPUs.
    response = put(as_operator, "acme", 2)
    assert response.json()["message"].endswith("would add up to 2 GPUs; it has 1.86 bookable GPUs")
    assert put(as_operator, "acme", 1).status_code == 200
    body = {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "mig-3g.40gb", "count": 1}],
        "duration": "1h",
    }
    assert as_acme.post("/api/v1/reservations", body, format="json").status_code == 201
    row = as_acme.get(SHARES).json()["results"][0]
    assert (row["holdingGpus"], row["borrowedGpus"]) == (0.4286, 0.0)


def test_a_share_in_a_pool_the_tenant_may_not_use_is_refused(as_operator, globex_pool, tenant):
    response = put(as_operator, "acme", 0, pool="globex-pool")
    assert (response.status_code, response.json()) == (
        400,
        {"code": "INVALID_INPUT", "message": "tenant acme may not use pool globex-pool"},
    )
    assert not PoolShare.objects.exists()
