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
