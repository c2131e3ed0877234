"""A pending summary names five groups (spec); the pages list the rest, so the groups add up to the nodes."""

import re

import pytest


@pytest.fixture
def seven_ways(make_node, tenant):
    """Seven nodes that turn a 4-GPU request down in six ways, two of them the same way."""
    make_node("a1", gpus=1)
    make_node("a2", gpus=1)
    make_node("b", gpus=2)
    make_node("c", gpus=3)
    make_node("d", gpus=4, cordoned=True)
    make_node("e", gpus=4, maintenance=True)
    make_node("f", gpus=0)


def summary_groups(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"(\d+) × ", text)]


def test_the_pages_list_the_groups_past_the_fifth(alice, seven_ways, book):
    waiting = book("acme", gpus=4)
    assert waiting.status == "pending"
    [condition] = waiting.conditions
    message = condition["message"]
    assert message.startswith("no node fits (7 nodes): 2 × fits: 1 of 4 gpu free; ")
    assert len(summary_groups(message.split(": ", 1)[1])) == 5 and sum(summary_groups(message)) == 6
    for url in (f"/reservations/{waiting.pk}/", "/reservations/"):
        page = alice.get(url).text
        more = re.search(r'<span class="more-groups">(.*?)</span>', page).group(1)
        assert re.fullmatch(r"and 1 more: 1 × [^;]+", more), more
        assert sum(summary_groups(message)) + sum(summary_groups(more)) == 7


def test_the_api_keeps_the_spec_summary_and_fields(seven_ways, book):
    from capacity import services
    from capacity.api.views import render_reservation

    waiting = book("acme", gpus=4)
    data = render_reservation(services.get(waiting.pk))
    [condition] = data["conditions"]
    assert set(condition) == {"type", "status", "reason", "message"}
    assert len(summary_groups(condition["message"])) == 5


def test_a_summary_of_five_groups_or_fewer_lists_nothing_more(alice, make_node, tenant, book):
    make_node("a1", gpus=1)
    make_node("d", gpus=4, cordoned=True)
    waiting = book("acme", gpus=4)
    assert "more-groups" not in alice.get(f"/reservations/{waiting.pk}/").text
    assert "more" not in waiting.conditions[0]
