"""The kept pages' keys: tenants by id, not slug; a query's unknown parameters ignored; a bound per reader."""

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tenants import make_tenant

LIST = "/reservations/"
POOL = "/pools/lab-pool/"
NODE = "/nodes/node-a/"


def row_of(html: str, pk: int) -> str:
    found = re.search(rf'<tr id="reservation-{pk}" class="status-(\w+)">.*?</tr>', html, re.S)
    return found.group(0) if found else ""


def member_of(tenant, username: str) -> Client:
    from django.contrib.auth.models import User

    user = User.objects.create_user(username, password=f"pw-{username}-123")
    tenant.users.add(user)
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db(transaction=True)
def test_a_new_tenant_under_a_renamed_tenants_old_slug_reads_nothing_kept_for_the_old(two_hosts, book, alice):
    old = book("acme", gpus=2)
    assert row_of(alice.get(LIST).text, old.pk)  # kept for acme's members now
    assert f"#{old.pk} acme" in alice.get(NODE).text
    assert f"reservation {old.pk} (acme)" in alice.get(POOL).text
    from inventory.models import Tenant

    renamed = Tenant.objects.get(slug="acme")
    renamed.slug = "acme-old"
    renamed.save()
    carol = member_of(make_tenant("acme", "New Acme"), "carol")
    assert not row_of(carol.get(LIST).text, old.pk)
    assert f"#{old.pk}" not in carol.get(NODE).text
    assert f"reservation {old.pk}" not in carol.get(POOL).text


def cache_rows() -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM berth_cache")
        return cur.fetchone()[0]


def stores(client: Client, url: str, **headers) -> bool:
    """Return whether reading `url` stored anything in the cache (drew a fragment and kept it)."""
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url, **headers).status_code == 200
    return any("INSERT INTO" in q["sql"] and "berth_cache" in q["sql"] for q in captured.captured_queries)


def test_unknown_parameters_and_their_order_make_no_new_kept_page(two_hosts, op):
    assert stores(op, POOL + "?q=node&state=free")
    for same in ("?state=free&q=node", "?q=node&state=free&junk=1", "?zz=9&q=node&state=free&utm=x"):
        assert not stores(op, POOL + same), same


def test_a_kept_page_links_and_returns_to_its_known_parameters_alone(two_hosts, book, alice, op):
    from django.contrib.auth.models import User

    reservation = book("acme", gpus=1)
    html = alice.get(LIST + "?junk=evil&status=placed").text
    assert "evil" not in html and "junk" not in html
    assert "?next=/reservations/%3Fstatus%3Dplaced" in row_of(html, reservation.pk)
    User.objects.filter(username="olga").update(is_staff=True)  # the node rows' forms show
    nodes = op.get(POOL + "?junk=evil&q=node").text
    assert "evil" not in nodes and 'name="next" value="/pools/lab-pool/?q=node"' in nodes


def flood(client: Client, count: int = 300) -> None:
    """Read the pool page with `count` distinct query strings: half junk, half distinct filters."""
    for i in range(count):
        query = f"?junk{i}=1" if i % 2 else f"?q=node-{i}"
        assert client.get(POOL + query).status_code == 200


def test_distinct_query_strings_from_one_reader_store_at_most_its_bound(two_hosts, alice, settings):
    from capacity.views.page_cache import PAGE_VARIANTS_PER_READER

    settings.PAGE_CACHE_SECONDS = 600  # none ends while the reader sends them
    # The nodes section alone (htmx) from here on: the whole page's chart is drawn anew each
    # minute, and a flood on a busy machine may cross one.
    assert stores(alice, POOL + "?q=kept", HTTP_HX_REQUEST="true")
    before = cache_rows()
    flood(alice)
    # Two fragments of the page read the query (nodes, filters); the chart (a new one each
    # minute) and the shares and policy do not; one row holds the reader's kept pages.
    assert cache_rows() - before <= 2 * PAGE_VARIANTS_PER_READER + 2 + 1 + 1
    assert not stores(alice, POOL + "?q=one-more", HTTP_HX_REQUEST="true")  # drawn, not kept
    assert not stores(alice, POOL + "?q=kept", HTTP_HX_REQUEST="true")  # kept: read, not drawn again


def test_another_readers_kept_page_stays_kept_through_one_readers_flood(two_hosts, alice, op, settings):
    settings.PAGE_CACHE_SECONDS = 600
    settings.CACHES = {
        **settings.CACHES,
        "default": {**settings.CACHES["default"], "OPTIONS": {"MAX_ENTRIES": 100}},
    }
    # The nodes section alone (htmx), as above.
    assert stores(op, POOL + "?state=free", HTTP_HX_REQUEST="true")
    flood(alice)
    assert not stores(op, POOL + "?state=free", HTTP_HX_REQUEST="true")  # still kept: read, nothing stored
