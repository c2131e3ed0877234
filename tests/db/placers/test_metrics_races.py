"""Lost races in /metrics: each replan counts, and giving up after the last attempt is its own outcome."""

import pytest
from django.contrib.auth.models import User
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from test_lost_races import racing_config, steal

from capacity import services
from inventory import services as nodes

from booking import NOW, ask

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def scrape():
    web = Client()
    web.force_login(User.objects.create_user("ops", is_staff=True))

    def read(name, **labels) -> float:
        response = web.get("/metrics")
        assert response.status_code == 200
        return sum(
            s.value
            for family in text_string_to_metric_families(response.content.decode())
            for s in family.samples
            if s.name == name and s.labels == labels
        )

    return read


def test_a_lost_race_then_placed_counts_one_lost_race_and_one_placement(
    tenant, other_tenant, make_node, scrape
):
    make_node("node-a", gpus=2)
    make_node("node-b", gpus=2)
    lost, placed = (
        scrape("berth_placement_lost_races_total", placer="inline"),
        scrape("berth_placements_total", placer="inline", outcome="placed"),
    )
    config = racing_config({"node-a": steal("node-a", ["node-b"])})
    assert services.reserve(ask(2), config=config, now=NOW).reservation.status == "placed"
    assert scrape("berth_placement_lost_races_total", placer="inline") - lost == 1
    # acme's placement, and globex's that took node-a meanwhile.
    assert scrape("berth_placements_total", placer="inline", outcome="placed") - placed == 2


def test_three_lost_races_count_three_and_end_as_the_lost_race_outcome(
    tenant, other_tenant, make_node, scrape
):
    for name in ("node-a", "node-b", "node-c"):
        make_node(name, gpus=2)
    lost = scrape("berth_placement_lost_races_total", placer="inline")
    gave_up = scrape("berth_placements_total", placer="inline", outcome="lost_race")
    actions = {
        "node-a": steal("node-a", ["node-b", "node-c"]),
        "node-b": lambda: nodes.cordon("node-b"),
        "node-c": lambda: nodes.cordon("node-c"),
    }
    result = services.reserve(ask(2), config=racing_config(actions), now=NOW)
    assert result.outcome.reason.startswith("Unschedulable after 3 conflicting attempts")
    assert scrape("berth_placement_lost_races_total", placer="inline") - lost == 3
    assert scrape("berth_placements_total", placer="inline", outcome="lost_race") - gave_up == 1
