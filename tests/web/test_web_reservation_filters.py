"""The reservations page filters by pool, node, status and a window, with the API's FilterSet."""

import dataclasses
import re
import sys
from datetime import UTC, datetime

import pytest

from capacity import services
from capacity.conf import placer_config

from web_helpers import HX, error_next_to, field_block


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def book_during(tenant: str, gpus: int, start: str, end: str):
    """Book through the services for [start, end), the best node first (no random pick)."""
    data = {
        "tenantId": tenant,
        "poolId": "lab-pool",
        "devices": [{"class": "gpu", "count": gpus}],
        "during": {"start": ms(start), "end": ms(end)},
    }
    return services.reserve(data, config=dataclasses.replace(placer_config(), random=None)).reservation


def listed(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<tr id="reservation-(\d+)"', html)]


@pytest.fixture
def lab(make_node, tenant, other_tenant):
    return [make_node("node-a", gpus=2), make_node("node-b", gpus=2)]


@pytest.fixture
def february(lab):
    a = book_during("acme", 2, "2027-02-01", "2027-02-03")
    b = book_during("acme", 2, "2027-02-02", "2027-02-04")
    g = book_during("globex", 1, "2027-03-01", "2027-03-02")
    return a.pk, b.pk, g.pk


def test_an_operator_filters_the_page_by_node_and_window(op, february):
    a, b, g = february
    assert listed(op.get("/reservations/?node=node-a").text) == [g, a]
    assert listed(op.get("/reservations/?node=node-b").text) == [b]
    assert listed(op.get("/reservations/?from=2027-02-03&to=2027-03-01").text) == [b]
    html = op.get("/reservations/?pool=lab-pool&status=placed&from=2027-02-20").text
    assert listed(html) == [g]
    # The form keeps what was asked.
    assert 'value="2027-02-20"' in field_block(html, "from")
    assert '<option value="lab-pool" selected>lab-pool</option>' in field_block(html, "pool")


def test_a_tenant_filtering_by_node_sees_only_its_own(alice, february):
    a, _b, _g = february
    assert listed(alice.get("/reservations/?node=node-a").text) == [a]


def test_the_pool_filter_offers_only_the_pools_the_user_may_read(alice, op, lab, site, other_tenant):
    from inventory.models import Pool

    Pool.objects.create(slug="globex-only", name="Globex only", site=site, owner_tenant=other_tenant)
    assert "globex-only" not in field_block(alice.get("/reservations/").text, "pool")
    assert 'value="globex-only"' in field_block(op.get("/reservations/").text, "pool")


def test_a_filter_that_cannot_be_read_shows_its_error_next_to_it_and_lists_nothing(op, february):
    html = op.get("/reservations/?from=yesterday&node=node-a").text
    assert error_next_to(html, "from").startswith("must be an ISO 8601 date or time in UTC")
    assert listed(html) == []
    assert "Nothing listed: fix the filter marked above." in html
    html = op.get("/reservations/?from=2027-02-03&to=2027-02-01").text
    assert error_next_to(html, "to") == "must be after from"


def test_no_match_says_so_and_offers_to_clear(op, february):
    html = op.get("/reservations/?node=node-b&status=pending").text
    assert "No reservations match these filters." in html


def test_the_filter_form_answers_htmx_with_itself_and_the_list(op, february):
    a, _b, g = february
    response = op.get("/reservations/?node=node-a&to=x", HTTP_HX_TARGET="reservations-body", **HX)
    assert response.text.lstrip().startswith('<div id="reservations-body">')
    assert error_next_to(response.text, "to").startswith("must be an ISO 8601")
    response = op.get("/reservations/?node=node-a", HTTP_HX_TARGET="reservations-body", **HX)
    assert listed(response.text) == [g, a]


def test_the_pager_keeps_the_filters(op, lab, monkeypatch):
    # The package exports the view under the module's name: reach the module itself.
    monkeypatch.setattr(sys.modules["capacity.views.reservations"], "RESERVATIONS_PER_PAGE", 2)
    made = [book_during("acme", 1, "2027-02-01", "2027-02-02").pk for _ in range(3)]
    html = op.get("/reservations/?pool=lab-pool&from=2027-02-01").text
    assert listed(html) == made[::-1][:2]
    link = re.search(r'<a href="\?([^"]*)"[^>]*>Next →</a>', html).group(1).replace("&amp;", "&")
    assert link == "from=2027-02-01&pool=lab-pool&page=2"  # in a fixed order: the list is kept for it
    assert listed(op.get(f"/reservations/?{link}").text) == [made[0]]
