"""A tenant sees only what is its own or shared: another tenant's node does not exist for it.

lab-pool (shared): node-a (shared), node-g (owned by globex)
globex-only (private to globex): node-t with 2 × tpu
"""

import pytest
from rest_framework.test import APIClient

from capacity.rollups import refresh_rollups
from inventory.models import Device, Pool


@pytest.fixture
def fleet(make_node, other_tenant, site):
    make_node("node-a", gpus=2)
    make_node("node-g", gpus=2, owner_tenant=other_tenant)
    private = Pool.objects.create(
        slug="globex-only", name="Globex only", site=site, owner_tenant=other_tenant
    )
    node = make_node("node-t", gpus=0, pool=private)
    Device.objects.bulk_create(
        Device(node=node, uuid=f"TPU-{i}", device_class="tpu", index=i) for i in range(2)
    )
    refresh_rollups([private.pk])  # as inventory ingestion would


def api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_another_tenants_node_is_404_on_its_page_and_in_the_api(
    alice, bob, op, acme_user, globex_user, fleet
):
    assert alice.get("/nodes/node-g/").status_code == 404
    assert bob.get("/nodes/node-g/").status_code == 200
    assert op.get("/nodes/node-g/").status_code == 200
    response = api(acme_user).get("/api/v1/nodes/node-g")
    assert (response.status_code, response.json()["code"]) == (404, "NOT_FOUND")
    assert api(globex_user).get("/api/v1/nodes/node-g").json()["ownerTenant"] == "globex"
    names = [n["name"] for n in api(acme_user).get("/api/v1/nodes").json()["results"]]
    assert names == ["node-a"]


def test_the_pool_page_lists_no_node_of_another_tenant(alice, op, fleet):
    assert "node-g" not in alice.get("/pools/lab-pool/").text
    assert "globex" not in alice.get("/pools/lab-pool/").text
    assert "node-g" in op.get("/pools/lab-pool/").text


def test_the_forms_offer_only_classes_of_pools_the_user_may_book(alice, bob, fleet):
    for url in ("/book/", "/preview/"):
        assert 'value="tpu"' not in alice.get(url).text, url
        assert 'value="tpu"' in bob.get(url).text, url


def test_reasons_do_not_name_another_tenant_to_a_tenant(alice, op, acme_user, make_node):
    """
    lab-pool: node-d, dedicated to globex. acme's preview and pending reservation say "dedicated to
    another tenant"; the operator reads the spec's reason whole.
    """
    from inventory import services as nodes

    from tenants import make_tenant

    make_tenant("globex")
    make_node("node-d", gpus=2)
    nodes.dedicate("node-d", "globex")
    body = {
        "tenantId": "acme",
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": 1}],
        "duration": "1d",
    }
    client = api(acme_user)
    preview = client.post("/api/v1/capacity/preview?explain=true", body, format="json").json()
    assert preview["reason"] == "no node fits (1 node): 1 × NoSchedule: dedicated to another tenant"
    assert preview["rejected"][0]["reason"] == "NoSchedule: dedicated to another tenant"
    created = client.post("/api/v1/reservations", body, format="json").json()
    assert (
        created["conditions"][0]["message"]
        == "no node fits (1 node): 1 × NoSchedule: dedicated to another tenant"
    )
    assert "globex" not in alice.get("/reservations/").text
    assert "globex" not in alice.get("/pools/lab-pool/").text
    stored = client.get(f"/api/v1/reservations/{created['id']}").json()["conditions"][0]["message"]
    assert stored.endswith("dedicated to another tenant")
    assert "dedicated=globex" in op.get("/reservations/").text


def test_the_node_page_does_not_name_another_tenants_dedication(alice, op, make_node):
    from inventory import services as nodes

    from tenants import make_tenant

    make_tenant("globex")
    make_node("node-d", gpus=2)
    nodes.dedicate("node-d", "globex")
    page = alice.get("/nodes/node-d/").text
    assert "globex" not in page
    assert "Dedicated to <strong>another tenant</strong>" in page
    assert "dedicated to another tenant" in page
    assert "globex" in op.get("/nodes/node-d/").text
