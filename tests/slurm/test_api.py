"""The bridge is set from the API; a tenant without a Slurm account in a bridged pool is refused before any lock."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from slurm_helpers import ms, now, shown

from slurm.reconcile import run_pass


def _lease(hours=1):
    start = now().replace(microsecond=0) + timedelta(hours=hours)
    return {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "binding": "node",
        "during": {"start": ms(start), "end": ms(start + timedelta(hours=1))},
    }


def test_an_operator_bridges_a_pool_and_maps_a_tenant_to_its_account(clean_slurm, make_node, tenant, operator,
                                                                      acme, client_for):  # fmt: skip
    make_node("berth-n1", gpus=8)
    api = client_for(operator)
    answer = api.put("/api/v1/pools/lab-pool/slurm", {"accountsRequired": True}, format="json")
    assert answer.status_code == 200 and answer.json()["bridged"] and answer.json()["accountsRequired"]

    refused = client_for(acme).post("/api/v1/reservations", _lease(), format="json")
    assert refused.status_code == 422 and refused.json()["code"] == "POLICY_LIMIT"
    assert "needs a Slurm account mapping for tenant acme" in refused.json()["message"]
    assert "/api/v1/pools/lab-pool/slurm/accounts/acme" in refused.json()["message"]

    bad = api.put("/api/v1/pools/lab-pool/slurm/accounts/acme", {"account": "Acme; rm -rf /"}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "INVALID_INPUT"
    mapped = api.put("/api/v1/pools/lab-pool/slurm/accounts/acme", {"account": "proj-acme"}, format="json")
    assert mapped.json()["accounts"] == {"acme": "proj-acme"}

    booked = client_for(acme).post("/api/v1/reservations", _lease(), format="json")
    assert booked.status_code == 201, booked.json()
    run_pass()
    assert shown(f"berth-{booked.json()['id']}")["Accounts"] == "proj-acme"
    assert client_for(acme).get("/api/v1/pools/lab-pool/slurm").status_code == 403


def test_the_refusal_comes_before_any_lock_or_row(clean_slurm, make_node, tenant, operator, acme, client_for):
    make_node("berth-n1", gpus=8)
    client_for(operator).put("/api/v1/pools/lab-pool/slurm", {"accountsRequired": True}, format="json")
    with CaptureQueriesContext(connection) as queries:
        refused = client_for(acme).post("/api/v1/reservations", _lease(), format="json")
    assert refused.status_code == 422
    written = [
        q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    locks = [q["sql"] for q in queries if "FOR UPDATE" in q["sql"].upper() or "advisory" in q["sql"].lower()]
    assert written == [] and locks == []


def test_bad_bridge_input_is_a_400_naming_the_field(clean_slurm, pool, operator, client_for):
    api = client_for(operator)
    assert api.put("/api/v1/pools/lab-pool/slurm", {"enabled": "yes"}, format="json").json() == {
        "code": "INVALID_INPUT",
        "message": "enabled must be true or false",
    }
    assert api.put("/api/v1/pools/lab-pool/slurm", {"cluster": "x"}, format="json").status_code == 400
    assert api.put("/api/v1/pools/nope/slurm", {}, format="json").status_code == 404
    assert (
        api.put("/api/v1/pools/lab-pool/slurm/accounts/acme", {"account": "a"}, format="json").status_code
        == 404
    )


def test_a_pool_bridged_for_whole_nodes_only_refuses_gpu_level_bookings(clean_slurm, make_node, tenant, operator,
                                                                         acme, client_for):  # fmt: skip
    make_node("berth-n1", gpus=8)
    client_for(operator).put("/api/v1/pools/lab-pool/slurm", {"wholeNodesOnly": True}, format="json")
    gpus = {**_lease(), "devices": [{"class": "gpu", "count": 2}]}
    del gpus["binding"]
    refused = client_for(acme).post("/api/v1/reservations", gpus, format="json")
    assert refused.status_code == 422 and "whole nodes only" in refused.json()["message"]
    assert client_for(acme).post("/api/v1/reservations", _lease(), format="json").status_code == 201


def test_a_pool_not_bridged_reads_as_such(pool, operator, client_for):
    assert client_for(operator).get("/api/v1/pools/lab-pool/slurm").json() == {
        "pool": "lab-pool",
        "bridged": False,
        "enabled": False,
        "accountsRequired": False,
        "wholeNodesOnly": False,
        "accounts": {},
    }
