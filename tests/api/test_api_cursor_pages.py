"""Every API list pages by cursor: walked one item a page, forwards and back, it lists each item once.

lab: node-a and node-b in lab-pool, 4 GPUs each; three more nodes, two more pools, five
reservations, a few changes of node-a (its history), three webhooks of the operator.
"""

import pytest

from inventory import services as nodes
from inventory.models import Pool
from webhooks.models import Subscription


def walk(client, url):
    """Follow `next` from `url` to the end, then `previous` back; return the ids both ways."""
    forwards, page, link = [], None, url
    while link:
        page = client.get(link)
        assert page.status_code == 200, page.json()
        page = page.json()
        assert len(page["results"]) <= 1
        forwards += page["results"]
        link = page["next"]
    backwards, link = list(page["results"]), page["previous"]
    while link:
        page = client.get(link).json()
        backwards = page["results"] + backwards
        link = page["previous"]
    return forwards, backwards


@pytest.fixture
def listed(as_operator, operator, as_acme, lab, make_node, site, ask):
    for i in range(3):
        make_node(f"extra-{i}", gpus=1)
    for slug in ("pool-b", "pool-c"):
        Pool.objects.create(slug=slug, name=slug, site=site)
    for _ in range(5):
        as_acme.post("/api/v1/reservations", ask(1), format="json")
    nodes.cordon("node-a", reason="fan")
    nodes.uncordon("node-a")
    nodes.set_label("node-a", "rack", "r1")
    for i in range(3):
        Subscription.objects.create(
            owner=operator, url=f"https://hooks.example/{i}", events=["node.cordoned"]
        )


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/reservations",
        "/api/v1/nodes",
        "/api/v1/pools",
        "/api/v1/nodes/node-a/history",
        "/api/v1/webhooks",
    ],
)
def test_walking_a_list_one_item_a_page_lists_each_once_in_its_order_both_ways(as_operator, listed, path):
    everything = as_operator.get(f"{path}?page_size=500").json()
    assert everything["next"] is None and everything["previous"] is None
    assert len(everything["results"]) >= 3
    forwards, backwards = walk(as_operator, f"{path}?page_size=1")
    assert forwards == everything["results"]
    assert backwards == everything["results"]
